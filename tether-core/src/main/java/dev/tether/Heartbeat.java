package dev.tether;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Proof that a worker is making progress: the worker's real work calls {@link #beat()}, the
 * watchdog and readiness probe read {@link #elapsed()}, and callbacks (such as a {@link
 * LeaseExtender}) react to beats.
 *
 * <h2>Thread safety and cost</h2>
 *
 * All methods are thread-safe. {@code beat()} is on every tool's hot path, so it takes no lock and
 * allocates nothing: it reads the {@link Ticker} once, records the beat, and invokes the registered
 * callbacks in registration order on the calling thread, outside any lock. The recorded time has a
 * resolution of {@link #RESOLUTION}: a beat less than that after the recorded one does not write
 * the shared field, so that many threads beating one heartbeat read a shared cache line instead of
 * fighting over it. {@code elapsed()} may therefore over-report by up to one resolution step.
 * On the default {@link Ticker#system()}, a heartbeat beaten in a tight loop reads a cached clock
 * (a few nanoseconds per beat instead of a {@code System.nanoTime()} call; readings then lag the
 * real clock by up to about a millisecond).
 *
 * <h2>Callbacks</h2>
 *
 * Any number of callbacks may be registered; the same callback may be registered twice and then
 * runs twice. A callback that throws is logged and isolated: the other callbacks still run and
 * {@code beat()} returns normally. Callbacks added or removed during a beat take effect from the
 * next beat. Callbacks should be fast; they run on the beating thread.
 */
public final class Heartbeat {
  /** The resolution of the recorded beat time: beats closer together than this may be merged. */
  public static final Duration RESOLUTION = Duration.ofMillis(1);

  private static final long RESOLUTION_NANOS = RESOLUTION.toNanos();
  private static final Logger log = LoggerFactory.getLogger(Heartbeat.class);
  private static final Registration[] NONE = new Registration[0];
  private static final VarHandle LAST_BEAT;

  static {
    try {
      LAST_BEAT = MethodHandles.lookup().findVarHandle(Heartbeat.class, "lastBeat", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final Ticker ticker;
  private final Object registrationLock = new Object();

  @SuppressWarnings("unused") // accessed through LAST_BEAT
  private long lastBeat;

  /** Copy-on-write; replaced under {@code registrationLock}, read without a lock. */
  private volatile Registration[] registrations = NONE;

  /** Creates a heartbeat on the system ticker, counting as beaten now. */
  public Heartbeat() {
    this(Ticker.system());
  }

  /**
   * Creates a heartbeat on the given ticker, counting as beaten now.
   *
   * @param ticker the monotonic time source
   */
  public Heartbeat(Ticker ticker) {
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    LAST_BEAT.setRelease(this, ticker.read());
  }

  /**
   * Records a beat and invokes every registered callback on the calling thread.
   *
   * <p>Never throws because of a callback; never blocks unless a callback does.
   */
  public void beat() {
    long now = ticker.read();
    if (now - (long) LAST_BEAT.getOpaque(this) >= RESOLUTION_NANOS) {
      LAST_BEAT.setOpaque(this, now);
    }
    Registration[] current = registrations;
    for (Registration r : current) {
      try {
        r.onBeat(now);
      } catch (RuntimeException | Error e) {
        if (e instanceof VirtualMachineError) {
          throw (VirtualMachineError) e;
        }
        log.error("Heartbeat callback {} failed; the other callbacks still run", r, e);
      }
    }
  }

  /**
   * Returns the time since the last beat (or since creation, if there was none).
   *
   * @return a non-negative duration, accurate to {@link #RESOLUTION}
   */
  public Duration elapsed() {
    return Duration.ofNanos(Math.max(0L, elapsedNanos()));
  }

  /**
   * Returns the nanoseconds since the last beat on this heartbeat's ticker; cheaper than {@link
   * #elapsed()} for frequent checks.
   *
   * @return nanoseconds since the last beat, never negative
   */
  public long elapsedNanos() {
    return Math.max(0L, ticker.read() - lastBeatNanos());
  }

  /**
   * Returns the ticker reading of the last recorded beat.
   *
   * @return a reading of {@link #ticker()}
   */
  public long lastBeatNanos() {
    return (long) LAST_BEAT.getAcquire(this);
  }

  /**
   * Returns the ticker this heartbeat reads.
   *
   * @return the ticker
   */
  public Ticker ticker() {
    return ticker;
  }

  /**
   * Registers a callback invoked on every beat.
   *
   * @param callback the callback; runs on the beating thread and should be fast
   * @return a handle whose {@link Registration#close()} removes exactly this registration
   */
  public Registration addCallback(Runnable callback) {
    Objects.requireNonNull(callback, "callback");
    return add(new RunnableRegistration(this, callback));
  }

  /**
   * Removes the earliest registration of {@code callback} (compared by identity).
   *
   * @param callback the callback passed to {@link #addCallback(Runnable)}
   * @return whether a registration was removed
   */
  public boolean removeCallback(Runnable callback) {
    Objects.requireNonNull(callback, "callback");
    synchronized (registrationLock) {
      for (Registration r : registrations) {
        if (r instanceof RunnableRegistration && ((RunnableRegistration) r).callback == callback) {
          return removeLocked(r);
        }
      }
      return false;
    }
  }

  /**
   * Returns the number of registered callbacks.
   *
   * @return the count
   */
  public int callbackCount() {
    return registrations.length;
  }

  <R extends Registration> R add(R registration) {
    synchronized (registrationLock) {
      Registration[] old = registrations;
      Registration[] next = Arrays.copyOf(old, old.length + 1);
      next[old.length] = registration;
      registrations = next;
    }
    return registration;
  }

  boolean remove(Registration registration) {
    synchronized (registrationLock) {
      return removeLocked(registration);
    }
  }

  private boolean removeLocked(Registration registration) {
    Registration[] old = registrations;
    for (int i = 0; i < old.length; i++) {
      if (old[i] == registration) {
        Registration[] next = new Registration[old.length - 1];
        System.arraycopy(old, 0, next, 0, i);
        System.arraycopy(old, i + 1, next, i, old.length - i - 1);
        registrations = next;
        return true;
      }
    }
    return false;
  }

  @Override
  public String toString() {
    return "Heartbeat[elapsed=" + elapsed() + ", callbacks=" + callbackCount() + "]";
  }

  /**
   * One callback's registration on a heartbeat. Closing it removes exactly this registration,
   * whatever else was added or removed meanwhile; closing it again does nothing.
   */
  public abstract static class Registration implements AutoCloseable {
    private final Heartbeat heartbeat;

    Registration(Heartbeat heartbeat) {
      this.heartbeat = heartbeat;
    }

    /**
     * Invoked on every beat with the ticker reading of that beat.
     *
     * @param nowNanos the beat's ticker reading
     */
    abstract void onBeat(long nowNanos);

    /**
     * Returns the heartbeat this registration belongs to.
     *
     * @return the heartbeat
     */
    public Heartbeat heartbeat() {
      return heartbeat;
    }

    /**
     * Returns whether this registration is still active.
     *
     * @return true until closed
     */
    public boolean isActive() {
      for (Registration r : heartbeat.registrations) {
        if (r == this) {
          return true;
        }
      }
      return false;
    }

    /** Removes this registration; idempotent. */
    @Override
    public void close() {
      heartbeat.remove(this);
    }
  }

  private static final class RunnableRegistration extends Registration {
    final Runnable callback;

    RunnableRegistration(Heartbeat heartbeat, Runnable callback) {
      super(heartbeat);
      this.callback = callback;
    }

    @Override
    void onBeat(long nowNanos) {
      callback.run();
    }

    @Override
    public String toString() {
      return callback.toString();
    }
  }
}
