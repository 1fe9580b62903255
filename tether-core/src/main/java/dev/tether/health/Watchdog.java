package dev.tether.health;

import dev.tether.Heartbeat;
import dev.tether.Ticker;
import java.io.IOException;
import java.lang.management.LockInfo;
import java.lang.management.ManagementFactory;
import java.lang.management.MonitorInfo;
import java.lang.management.ThreadInfo;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ends the process when a monitored loop stops beating its {@link Heartbeat} for longer than the
 * stall threshold: a hard stop, because a stuck thread cannot be asked to stop, and the leases of
 * its work will expire so that a healthy worker redelivers them.
 *
 * <h2>Detection</h2>
 *
 * A background thread (by default a daemon named {@code tether-watchdog}) checks every heartbeat.
 * It does not poll on a fixed grid: after each check it sleeps until the earliest moment any
 * heartbeat could exceed the threshold ({@code lastBeat + threshold}), capped by the check
 * interval, so that a stall is detected within a few milliseconds of the threshold even with a
 * long interval (see {@link #nextCheckDelay()}). A loop is stalled when the time since its last
 * beat is strictly greater than the threshold. A loop that has ended is {@linkplain #retire(String)
 * retired}: it no longer beats and cannot stall. All heartbeats must read the watchdog's {@link
 * Ticker}; the sleeping itself uses real time, so with a settable ticker the watchdog re-checks at
 * most every check interval.
 *
 * <h2>Termination</h2>
 *
 * On a stall the watchdog logs, at ERROR with the word {@code CRITICAL}, each stalled loop's name,
 * time since its last beat and the threshold, then a dump of every thread's stack; then it calls
 * the {@link Terminator}, by default {@link Terminator#kill()}: the process sends itself {@code
 * SIGKILL} (exit status {@link #KILLED_EXIT_STATUS} as a parent or Kubernetes sees it, the status
 * of any killed process), falling back to {@link Runtime#halt(int)} with {@link #EXIT_STATUS} where
 * that is not possible. Either way shutdown hooks do not run and nothing can block the exit. {@code
 * SIGKILL} is preferred because {@code Runtime.halt} first waits a while for threads blocked in
 * native code (a worker reading a child process's output always has some), which would put the kill
 * past the threshold (the figures are in {@code docs/RELIABILITY.md}). The logging runs on a
 * separate thread ({@code tether-watchdog-diagnostics}); the watchdog waits for it at most the
 * diagnostics timeout (default {@link #DEFAULT_DIAGNOSTICS_TIMEOUT}) and then terminates
 * regardless, so a stuck logger cannot keep a stuck process alive. If the terminator returns (a
 * test terminator) or throws (logged), the watchdog stops monitoring.
 *
 * <h2>Thread safety</h2>
 *
 * All methods are thread-safe. The background loop catches and logs any {@link Throwable} from a
 * check and keeps going. {@link #stop()} is idempotent; a stopped watchdog cannot be restarted.
 */
public final class Watchdog {
  /**
   * The exit status of a process ended by {@link Terminator#halt()} (and by {@link
   * Terminator#kill()} where it cannot send {@code SIGKILL}): 70, {@code EX_SOFTWARE} in BSD {@code
   * sysexits.h} ("internal software error").
   */
  public static final int EXIT_STATUS = 70;

  /** The exit status of a process ended by {@link Terminator#kill()}: 137, 128 + {@code SIGKILL}. */
  public static final int KILLED_EXIT_STATUS = 137;

  /** Default stall threshold: 720 s, greater than a 30 s long poll plus 600 s of processing. */
  public static final Duration DEFAULT_STALL_THRESHOLD = Duration.ofSeconds(720);

  /** Default longest time between two checks: 60 s. */
  public static final Duration DEFAULT_CHECK_INTERVAL = Duration.ofSeconds(60);

  /** Default longest wait for the stall diagnostics before terminating anyway: 2 s. */
  public static final Duration DEFAULT_DIAGNOSTICS_TIMEOUT = Duration.ofSeconds(2);

  /** Shortest sleep between two checks, so that a stall at the exact threshold cannot spin. */
  private static final long MIN_DELAY_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  private static final Logger log = LoggerFactory.getLogger(Watchdog.class);

  private final List<String> names;
  private final List<Heartbeat> heartbeats;
  private final long thresholdNanos;
  private final Duration threshold;
  private final Duration checkInterval;
  private final Duration diagnosticsTimeout;
  private final Ticker ticker;
  private final Terminator terminator;
  private final ThreadFactory threadFactory;
  private final Consumer<List<Stall>> diagnostics;

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition wakeUp = lock.newCondition();
  private State state = State.NEW; // guarded by lock
  private Thread thread; // guarded by lock

  private enum State {
    NEW,
    RUNNING,
    STOPPED
  }

  /** Indexes (into {@code heartbeats}) of retired loops; an ended loop is no longer watched. */
  private final java.util.concurrent.atomic.AtomicIntegerArray retired;

  private Watchdog(Builder b) {
    this.names = List.copyOf(b.heartbeats.keySet());
    this.heartbeats = List.copyOf(b.heartbeats.values());
    this.retired = new java.util.concurrent.atomic.AtomicIntegerArray(heartbeats.size());
    this.threshold = b.stallThreshold;
    this.thresholdNanos = b.stallThreshold.toNanos();
    this.checkInterval = b.checkInterval;
    this.diagnosticsTimeout = b.diagnosticsTimeout;
    this.ticker = b.ticker;
    this.terminator = b.terminator;
    this.threadFactory = b.threadFactory;
    this.diagnostics = b.diagnostics != null ? b.diagnostics : Watchdog::logDiagnostics;
  }

  /**
   * Returns a builder with the defaults: threshold {@link #DEFAULT_STALL_THRESHOLD}, interval
   * {@link #DEFAULT_CHECK_INTERVAL}, the system ticker, {@link Terminator#kill()}, and a daemon
   * thread named {@code tether-watchdog}.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Checks every heartbeat once, without terminating anything.
   *
   * @return the stalled loops, in registration order; empty when none is stalled
   */
  public List<Stall> checkHeartbeats() {
    long now = ticker.read();
    List<Stall> stalls = new ArrayList<>(0);
    for (int i = 0; i < heartbeats.size(); i++) {
      if (retired.get(i) != 0) {
        continue;
      }
      long elapsed = now - heartbeats.get(i).lastBeatNanos();
      if (elapsed > thresholdNanos) {
        stalls.add(new Stall(names.get(i), Duration.ofNanos(elapsed), threshold));
      }
    }
    return stalls;
  }

  /**
   * Returns how long the background thread sleeps after a check made now: until the earliest
   * moment any heartbeat could exceed the threshold (plus one millisecond, as a stall is strictly
   * greater than the threshold), at most the check interval, and at least one millisecond.
   *
   * @return the delay, between 1 ms and the check interval
   */
  public Duration nextCheckDelay() {
    return Duration.ofNanos(nextCheckDelayNanos());
  }

  private long nextCheckDelayNanos() {
    long now = ticker.read();
    long delay = checkInterval.toNanos();
    for (int i = 0; i < heartbeats.size(); i++) {
      if (retired.get(i) != 0) {
        continue;
      }
      long untilStall = heartbeats.get(i).lastBeatNanos() + thresholdNanos - now + MIN_DELAY_NANOS;
      delay = Math.min(delay, untilStall);
    }
    return Math.max(MIN_DELAY_NANOS, delay);
  }

  /**
   * Stops watching the named loop, for good: it has ended, so it no longer beats and cannot stall
   * (a group draining for longer than the stall threshold must not be ended because its idle
   * loops have returned). Does nothing for an unknown name.
   *
   * @param name the loop's name, as registered
   */
  public void retire(String name) {
    int i = names.indexOf(name);
    if (i >= 0) {
      retired.set(i, 1);
    }
  }

  /**
   * Starts the background thread; does nothing if already running.
   *
   * @throws IllegalStateException if the watchdog was stopped (it cannot be restarted)
   */
  public void start() {
    lock.lock();
    try {
      if (state == State.RUNNING) {
        return;
      }
      if (state == State.STOPPED) {
        throw new IllegalStateException(
            "Watchdog was stopped and cannot be restarted; build a new one");
      }
      Thread t = threadFactory.newThread(this::runLoop);
      if (t == null) {
        throw new IllegalStateException("Watchdog thread factory returned null");
      }
      thread = t;
      state = State.RUNNING;
      t.start();
      log.info(
          "Watchdog started: loops={}, stallThreshold={}, checkInterval={}",
          names,
          threshold,
          checkInterval);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Stops the background thread and waits briefly (at most one second) for it to end. Idempotent;
   * never terminates the process. Restores the interrupt flag if interrupted while waiting.
   */
  public void stop() {
    Thread t;
    lock.lock();
    try {
      if (state == State.STOPPED) {
        return;
      }
      state = State.STOPPED;
      t = thread;
      wakeUp.signalAll();
    } finally {
      lock.unlock();
    }
    if (t != null && t != Thread.currentThread()) {
      try {
        t.join(1000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Returns whether the background thread is monitoring.
   *
   * @return true between {@link #start()} and {@link #stop()} (or a termination that returned)
   */
  public boolean isRunning() {
    lock.lock();
    try {
      return state == State.RUNNING;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Returns the stall threshold.
   *
   * @return the threshold
   */
  public Duration stallThreshold() {
    return threshold;
  }

  /**
   * Returns the longest time between two checks.
   *
   * @return the interval
   */
  public Duration checkInterval() {
    return checkInterval;
  }

  /**
   * Returns the names of the monitored loops, in registration order.
   *
   * @return the names
   */
  public List<String> loopNames() {
    return names;
  }

  private void runLoop() {
    while (true) {
      List<Stall> stalls = List.of();
      long delay = checkInterval.toNanos();
      try {
        stalls = checkHeartbeats();
        delay = nextCheckDelayNanos();
      } catch (Throwable t) {
        log.error("Watchdog check failed; checking again in {}", checkInterval, t);
      }
      if (!stalls.isEmpty()) {
        lock.lock();
        try {
          if (state != State.RUNNING) {
            return;
          }
        } finally {
          lock.unlock();
        }
        terminate(stalls);
        lock.lock();
        try {
          state = State.STOPPED;
        } finally {
          lock.unlock();
        }
        return;
      }
      lock.lock();
      try {
        if (state != State.RUNNING) {
          return;
        }
        try {
          wakeUp.awaitNanos(delay);
        } catch (InterruptedException e) {
          // Only stop() ends the watchdog; an interrupt from elsewhere must not disarm it.
          log.warn("Watchdog thread interrupted; it keeps monitoring until stop() is called");
        }
        if (state != State.RUNNING) {
          return;
        }
      } finally {
        lock.unlock();
      }
    }
  }

  private void terminate(List<Stall> stalls) {
    Thread diagnosticsThread =
        new Thread(() -> diagnostics.accept(stalls), "tether-watchdog-diagnostics");
    diagnosticsThread.setDaemon(true);
    try {
      diagnosticsThread.start();
      diagnosticsThread.join(Math.max(1, diagnosticsTimeout.toMillis()));
    } catch (Throwable t) {
      // Interrupted, or no thread could be started: terminate anyway, nothing may block it.
      if (t instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
    }
    try {
      terminator.terminate(EXIT_STATUS, stalls);
    } catch (Throwable t) {
      log.error(
          "CRITICAL: watchdog: terminator {} failed; the process was NOT terminated and the"
              + " watchdog stops monitoring",
          terminator,
          t);
    }
  }

  private static void logDiagnostics(List<Stall> stalls) {
    try {
      for (Stall s : stalls) {
        log.error(
            "CRITICAL: watchdog: loop '{}' stalled: no heartbeat for {} ms (threshold {} ms)",
            s.name(),
            s.elapsed().toMillis(),
            s.threshold().toMillis());
      }
      log.error(
          "CRITICAL: watchdog: terminating the process because of stalled loops {};"
              + " thread dump follows\n{}",
          stalls.stream().map(Stall::name).toList(),
          threadDump());
    } catch (Throwable t) {
      // Nothing to do: the terminator runs anyway once the diagnostics timeout passes.
    }
  }

  /**
   * Formats the stack of every live thread, with held monitors and locks where the JVM reports
   * them.
   *
   * @return the dump, never null
   */
  static String threadDump() {
    StringBuilder sb = new StringBuilder(16 * 1024);
    try {
      var mx = ManagementFactory.getThreadMXBean();
      ThreadInfo[] infos =
          mx.dumpAllThreads(mx.isObjectMonitorUsageSupported(), mx.isSynchronizerUsageSupported());
      for (ThreadInfo info : infos) {
        if (info != null) {
          appendThread(sb, info);
        }
      }
    } catch (Throwable t) {
      sb.append("(ThreadMXBean dump failed: ").append(t).append("; falling back)\n");
      for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
        Thread th = e.getKey();
        sb.append('"').append(th.getName()).append("\" ").append(th.getState()).append('\n');
        for (StackTraceElement f : e.getValue()) {
          sb.append("\tat ").append(f).append('\n');
        }
        sb.append('\n');
      }
    }
    return sb.toString();
  }

  private static void appendThread(StringBuilder sb, ThreadInfo info) {
    sb.append('"')
        .append(info.getThreadName())
        .append("\" #")
        .append(info.getThreadId())
        .append(info.isDaemon() ? " daemon" : "")
        .append(' ')
        .append(info.getThreadState());
    if (info.getLockName() != null) {
      sb.append(" on ").append(info.getLockName());
    }
    if (info.getLockOwnerName() != null) {
      sb.append(" owned by \"")
          .append(info.getLockOwnerName())
          .append("\" #")
          .append(info.getLockOwnerId());
    }
    sb.append('\n');
    StackTraceElement[] frames = info.getStackTrace();
    MonitorInfo[] monitors = info.getLockedMonitors();
    for (int i = 0; i < frames.length; i++) {
      sb.append("\tat ").append(frames[i]).append('\n');
      for (MonitorInfo m : monitors) {
        if (m.getLockedStackDepth() == i) {
          sb.append("\t- locked ").append(m).append('\n');
        }
      }
    }
    LockInfo[] synchronizers = info.getLockedSynchronizers();
    if (synchronizers.length > 0) {
      sb.append("\tLocked synchronizers:\n");
      for (LockInfo l : synchronizers) {
        sb.append("\t- ").append(l).append('\n');
      }
    }
    sb.append('\n');
  }

  @Override
  public String toString() {
    return "Watchdog[loops="
        + names
        + ", stallThreshold="
        + threshold
        + ", checkInterval="
        + checkInterval
        + ", running="
        + isRunning()
        + "]";
  }

  /**
   * A loop found stalled by a check.
   *
   * @param name the loop's name
   * @param elapsed time since its last beat
   * @param threshold the stall threshold it exceeded
   */
  public record Stall(String name, Duration elapsed, Duration threshold) {
    /**
     * Validates the fields.
     *
     * @param name the loop's name
     * @param elapsed time since its last beat
     * @param threshold the stall threshold it exceeded
     * @throws NullPointerException if a field is null
     */
    public Stall {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(elapsed, "elapsed");
      Objects.requireNonNull(threshold, "threshold");
    }
  }

  /**
   * Ends the process after a stall. The default, {@link #kill()}, never returns; a test terminator
   * may record the call and return, after which the watchdog stops monitoring.
   */
  @FunctionalInterface
  public interface Terminator {
    /**
     * Ends the process.
     *
     * @param exitStatus the status to exit with ({@link #EXIT_STATUS})
     * @param stalls the stalled loops that caused it, never empty
     */
    void terminate(int exitStatus, List<Stall> stalls);

    /**
     * Returns the terminator that calls {@link Runtime#halt(int)}: the JVM ends at once, shutdown
     * hooks and finalizers do not run, and no thread can delay it.
     *
     * @return the halting terminator
     */
    static Terminator halt() {
      return (status, stalls) -> Runtime.getRuntime().halt(status);
    }

    /**
     * Returns the terminator that sends this process {@code SIGKILL} (through the system's {@code
     * kill} command, waiting at most one second), and halts with the given status if the process is
     * still alive after that (no {@code kill} command, not a POSIX system). Ends the process at
     * once even while threads are blocked in native code, which delay {@link #halt()}.
     *
     * @return the killing terminator
     */
    static Terminator kill() {
      return (status, stalls) -> {
        try {
          String pid = Long.toString(ProcessHandle.current().pid());
          Process kill =
              new ProcessBuilder("kill", "-KILL", pid)
                  .redirectErrorStream(true)
                  .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                  .start();
          kill.waitFor(1, TimeUnit.SECONDS);
        } catch (IOException | RuntimeException e) {
          // fall through to halt
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        Runtime.getRuntime().halt(status);
      };
    }
  }

  /**
   * Builds a {@link Watchdog}. Each setter validates its value at once. Not thread-safe.
   */
  public static final class Builder {
    private final Map<String, Heartbeat> heartbeats = new LinkedHashMap<>();
    private Duration stallThreshold = DEFAULT_STALL_THRESHOLD;
    private Duration checkInterval = DEFAULT_CHECK_INTERVAL;
    private Duration diagnosticsTimeout = DEFAULT_DIAGNOSTICS_TIMEOUT;
    private Ticker ticker = Ticker.system();
    private Terminator terminator = Terminator.kill();
    private Consumer<List<Stall>> diagnostics;
    private ThreadFactory threadFactory =
        r -> {
          Thread t = new Thread(r, "tether-watchdog");
          t.setDaemon(true);
          return t;
        };

    private Builder() {}

    /**
     * Adds a heartbeat to monitor.
     *
     * @param name the loop's name, used in logs; unique within this watchdog
     * @param heartbeat the loop's heartbeat; must read the watchdog's ticker
     * @return this builder
     * @throws IllegalArgumentException if the name is blank or already used
     */
    public Builder heartbeat(String name, Heartbeat heartbeat) {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(heartbeat, "heartbeat");
      if (name.isBlank()) {
        throw new IllegalArgumentException("heartbeat name must not be blank");
      }
      if (heartbeats.containsKey(name)) {
        throw new IllegalArgumentException(
            "heartbeat name '" + name + "' is already used; loop names must be unique");
      }
      heartbeats.put(name, heartbeat);
      return this;
    }

    /**
     * Adds heartbeats named {@code loop-0}, {@code loop-1}, ... after those already added.
     *
     * @param list the heartbeats
     * @return this builder
     * @throws IllegalArgumentException if a generated name is already used
     */
    public Builder heartbeats(List<Heartbeat> list) {
      Objects.requireNonNull(list, "list");
      int base = heartbeats.size();
      for (int i = 0; i < list.size(); i++) {
        heartbeat("loop-" + (base + i), list.get(i));
      }
      return this;
    }

    /**
     * Sets how long a loop may go without a beat before the process is ended.
     *
     * @param threshold positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder stallThreshold(Duration threshold) {
      this.stallThreshold = positive("stallThreshold", threshold);
      return this;
    }

    /**
     * Sets the longest time between two checks.
     *
     * @param interval positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder checkInterval(Duration interval) {
      this.checkInterval = positive("checkInterval", interval);
      return this;
    }

    /**
     * Sets the longest wait for the stall diagnostics (log lines and thread dump) before the
     * terminator is called anyway.
     *
     * @param timeout positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder diagnosticsTimeout(Duration timeout) {
      this.diagnosticsTimeout = positive("diagnosticsTimeout", timeout);
      return this;
    }

    /**
     * Sets the ticker every monitored heartbeat reads.
     *
     * @param ticker the ticker
     * @return this builder
     */
    public Builder ticker(Ticker ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /**
     * Sets what ends the process on a stall (tests pass one that records the call).
     *
     * @param terminator the terminator
     * @return this builder
     */
    public Builder terminator(Terminator terminator) {
      this.terminator = Objects.requireNonNull(terminator, "terminator");
      return this;
    }

    /**
     * Sets the factory of the background thread (it should be a daemon named {@code tether-...}).
     *
     * @param factory the factory
     * @return this builder
     */
    public Builder threadFactory(ThreadFactory factory) {
      this.threadFactory = Objects.requireNonNull(factory, "factory");
      return this;
    }

    /** Replaces the stall diagnostics (logging and thread dump); for tests of a stuck logger. */
    Builder diagnostics(Consumer<List<Stall>> replacement) {
      this.diagnostics = Objects.requireNonNull(replacement, "replacement");
      return this;
    }

    /**
     * Builds the watchdog (not started).
     *
     * @return the watchdog
     * @throws IllegalArgumentException if a heartbeat reads another ticker than the watchdog's
     */
    public Watchdog build() {
      for (Map.Entry<String, Heartbeat> e : heartbeats.entrySet()) {
        if (e.getValue().ticker() != ticker) {
          throw new IllegalArgumentException(
              "heartbeat of loop '"
                  + e.getKey()
                  + "' reads ticker "
                  + e.getValue().ticker()
                  + " but the watchdog reads "
                  + ticker
                  + "; pass the heartbeats' ticker to ticker(...)");
        }
      }
      return new Watchdog(this);
    }

    private static Duration positive(String what, Duration d) {
      Objects.requireNonNull(d, what);
      if (d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(what + " must be > 0, was " + d);
      }
      return d;
    }
  }
}
