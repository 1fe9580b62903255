package dev.tether;

import dev.tether.mailbox.Message;
import dev.tether.mailbox.MessageCancelledException;
import dev.tether.mailbox.MessageFinalizedException;
import dev.tether.mailbox.ReceiptHandleExpiredException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Extends a message's lease when, and only when, its worker proves progress by beating a {@link
 * Heartbeat} (proof of work): no beats, no extension, and the lease expires so that a healthy
 * worker gets the message.
 *
 * <pre>{@code
 * var extender = new LeaseExtender(LeaseExtenderConfig.of(Duration.ofSeconds(60), Duration.ofMinutes(5)));
 * try (var attached = extender.attach(message, heartbeat)) {
 *   for (var chunk : work) {
 *     process(chunk);
 *     heartbeat.beat();              // may extend the lease, at most once a minute
 *     if (attached.isLeaseLost()) {  // another worker owns the message now
 *       break;
 *     }
 *   }
 * }
 * }</pre>
 *
 * <h2>Rate limit</h2>
 *
 * While attached, a beat extends the lease when at least {@code interval} has passed on the
 * heartbeat's {@link Ticker} since the last successful extension (or since attaching: a message
 * just received needs no extension). Each extension calls {@link
 * Message#extendVisibility(Duration)} with the configured extension, which never shortens the lease.
 *
 * <h2>Where the extension runs, and what a beat costs</h2>
 *
 * The extension runs on the beating thread, synchronously, with no lock held. This was chosen over
 * handing it to a background executor because (1) it keeps proof of work exact: a lease is only
 * extended while the thread doing the work is alive enough to make the call; (2) the handler learns
 * of a lost lease on the very beat that discovered it; (3) it needs no thread the user did not ask
 * for. The cost is that the one beat that is due blocks for one store round trip, at most once per
 * interval. A beat with nothing due reads one volatile field and compares it: the benchmark {@code
 * HeartbeatBenchmark} in {@code tether-bench} measures it (see the README's Performance section).
 * When several threads beat one heartbeat, a compare-and-set lets exactly one of them run a due
 * extension; the others return at once, so one message is never extended twice concurrently.
 *
 * <h2>Failures</h2>
 *
 * An extension refused with {@link ReceiptHandleExpiredException} is logged as a warning;
 * processing continues, {@link Attachment#isLeaseLost()} becomes true and no further extension is
 * tried ({@link MessageCancelledException}: {@link Attachment#isCancelled()} too). Any other
 * failure (the store unreachable, say) is logged with its exception and the extension is skipped;
 * the next beat at least {@code min(interval, }{@link #FAILURE_RETRY_DELAY}{@code )} later tries
 * again.
 *
 * <h2>A lease that ran out</h2>
 *
 * When told how long the lease surely lasts ({@link Attachment#leaseHeldUntil(long)}: for a
 * message just received, the receive's start plus its visibility timeout), the attachment counts
 * every confirmed extension as lasting from the moment its call started, and {@link
 * Attachment#isLeaseLost()} turns true (for good) once that bound passes on the ticker without a
 * confirmed extension: from then on the store may let another worker take the message over, so a
 * worker cut off from its store stops before that can happen, not after. The bound is a lower
 * bound of the store's own expiry as long as the two clocks run at the same rate.
 *
 * <h2>Deadline</h2>
 *
 * After {@link Attachment#extendUntil(long)}, beats no longer extend the lease: work that
 * overran its deadline lets its lease run out.
 *
 * <p>An extender serves one message at a time (one per loop): attaching while attached throws
 * {@link IllegalStateException}. Thread-safe.
 */
public final class LeaseExtender {
  /** The longest wait before retrying an extension that failed for a reason other than expiry. */
  public static final Duration FAILURE_RETRY_DELAY = Duration.ofSeconds(1);

  private static final Logger log = LoggerFactory.getLogger(LeaseExtender.class);

  private final LeaseExtenderConfig config;
  private final Listener listener;
  private final AtomicReference<Attachment> current = new AtomicReference<>();

  /** Creates an extender with {@link LeaseExtenderConfig#defaults()}. */
  public LeaseExtender() {
    this(LeaseExtenderConfig.defaults());
  }

  /**
   * Creates an extender.
   *
   * @param config the configuration
   */
  public LeaseExtender(LeaseExtenderConfig config) {
    this(config, Listener.NONE);
  }

  /**
   * Creates an extender that reports to {@code listener}.
   *
   * @param config the configuration
   * @param listener told of extensions and failures; must be fast and not throw (exceptions are
   *     logged and ignored)
   */
  public LeaseExtender(LeaseExtenderConfig config, Listener listener) {
    this.config = Objects.requireNonNull(config, "config");
    this.listener = Objects.requireNonNull(listener, "listener");
  }

  /**
   * Returns the configuration.
   *
   * @return the configuration
   */
  public LeaseExtenderConfig config() {
    return config;
  }

  /**
   * Returns whether an attachment is open.
   *
   * @return true between {@link #attach} and the attachment's {@link Attachment#close()}
   */
  public boolean isAttached() {
    return current.get() != null;
  }

  /**
   * Attaches to {@code heartbeat} so that its beats extend {@code message}'s lease, until the
   * returned attachment is closed. When the configuration is disabled, the attachment does nothing
   * (but is still exclusive).
   *
   * @param message the message whose lease to extend
   * @param heartbeat the heartbeat whose beats prove progress
   * @return the attachment; close it (try-with-resources) when the message is done
   * @throws IllegalStateException if this extender is already attached
   */
  public Attachment attach(Message<?, ?> message, Heartbeat heartbeat) {
    Objects.requireNonNull(message, "message");
    Objects.requireNonNull(heartbeat, "heartbeat");
    Attachment attachment = new Attachment(this, message, heartbeat);
    if (!current.compareAndSet(null, attachment)) {
      Attachment other = current.get();
      throw new IllegalStateException(
          "LeaseExtender already attached to message "
              + (other == null ? "?" : other.message.id())
              + "; close that attachment before attaching message "
              + message.id());
    }
    if (config.enabled()) {
      heartbeat.add(attachment);
    }
    return attachment;
  }

  @Override
  public String toString() {
    return "LeaseExtender[" + config + ", attached=" + isAttached() + "]";
  }

  /**
   * Observes a {@link LeaseExtender}, for metrics. Methods run on the beating thread, must be fast
   * and should not throw; an exception is logged and ignored.
   */
  public interface Listener {
    /** A listener that ignores everything. */
    Listener NONE = new Listener() {};

    /**
     * The lease of {@code message} was extended.
     *
     * @param message the message
     * @param extension how far from now
     */
    default void extended(Message<?, ?> message, Duration extension) {}

    /**
     * An extension failed for a reason other than a lost lease; it will be retried.
     *
     * @param message the message
     * @param error the failure
     */
    default void extensionFailed(Message<?, ?> message, RuntimeException error) {}

    /**
     * The lease of {@code message} is lost: the receipt handle expired.
     *
     * @param message the message
     */
    default void leaseLost(Message<?, ?> message) {}
  }

  /**
   * One message attached to one heartbeat. Closing it detaches exactly this attachment, whatever
   * other callbacks were added or removed meanwhile; closing again does nothing. Thread-safe.
   */
  public static final class Attachment extends Heartbeat.Registration {
    private static final int IDLE = 0;
    private static final int EXTENDING = 1;
    private static final int LOST = 2;
    private static final int CLOSED = 3;
    private static final VarHandle STATE;

    static {
      try {
        STATE = MethodHandles.lookup().findVarHandle(Attachment.class, "state", int.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    private final LeaseExtender extender;
    private final Message<?, ?> message;
    private final long intervalNanos;
    private final long retryNanos;
    private final Duration extension;

    /** Ticker reading from which an extension is due. */
    private volatile long nextDue;

    @SuppressWarnings("unused") // accessed through STATE
    private volatile int state;

    private volatile boolean leaseLost;
    private volatile boolean cancelled;
    private volatile long extensions;
    /** Ticker reading until which the lease surely holds; {@code heldUntilKnown} says if set. */
    private volatile long heldUntil;
    private volatile boolean heldUntilKnown;
    /** Ticker reading from which beats no longer extend; {@code extendUntilKnown} says if set. */
    private volatile long extendUntil;
    private volatile boolean extendUntilKnown;
    private final Ticker ticker;

    private Attachment(LeaseExtender extender, Message<?, ?> message, Heartbeat heartbeat) {
      super(heartbeat);
      this.extender = extender;
      this.message = message;
      this.intervalNanos = extender.config.interval().toNanos();
      this.retryNanos = Math.min(intervalNanos, FAILURE_RETRY_DELAY.toNanos());
      this.extension = extender.config.extension();
      this.ticker = heartbeat.ticker();
      this.nextDue = ticker.read() + intervalNanos;
    }

    @Override
    void onBeat(long nowNanos) {
      if (nowNanos - nextDue < 0) {
        return; // the hot path: nothing due
      }
      maybeExtend(nowNanos);
    }

    private void maybeExtend(long now) {
      if (!STATE.compareAndSet(this, IDLE, EXTENDING)) {
        return; // another thread is extending, or the lease is lost, or we are closed
      }
      int next = IDLE;
      try {
        if (leaseLost) {
          next = LOST;
          return;
        }
        if (now - nextDue < 0) {
          return; // another thread extended between our check and our CAS
        }
        if (extendUntilKnown && now - extendUntil >= 0) {
          nextDue = now + intervalNanos;
          log.debug("Not extending message {}: its work is past its deadline", message.id());
          return;
        }
        long started = ticker.read();
        message.extendVisibility(extension);
        nextDue = now + intervalNanos;
        if (heldUntilKnown && !leaseLost) {
          long bound = started + extension.toNanos();
          if (bound - heldUntil > 0) {
            heldUntil = bound;
          }
        }
        extensions++; // only ever written by the thread holding EXTENDING
        log.debug("Extended visibility for message {} by {}", message.id(), extension);
        notify(() -> extender.listener.extended(message, extension));
      } catch (ReceiptHandleExpiredException | MessageFinalizedException e) {
        next = LOST;
        if (e instanceof MessageCancelledException) {
          cancelled = true;
        }
        leaseLost = true;
        if ((int) STATE.getVolatile(this) != CLOSED) {
          log.warn(
              "Lease extension failed for message {}: receipt handle expired ({}); processing"
                  + " continues, the handler can see the lease is lost",
              message.id(),
              e.getMessage());
        }
        notify(() -> extender.listener.leaseLost(message));
      } catch (RuntimeException e) {
        nextDue = now + retryNanos;
        log.error("Lease extension failed for message {}; will retry on a later beat", message.id(), e);
        notify(() -> extender.listener.extensionFailed(message, e));
      } finally {
        STATE.compareAndSet(this, EXTENDING, next);
      }
    }

    private static void notify(Runnable call) {
      try {
        call.run();
      } catch (RuntimeException e) {
        log.error("LeaseExtender listener failed; ignored", e);
      }
    }

    /**
     * Returns the attached message.
     *
     * @return the message
     */
    public Message<?, ?> message() {
      return message;
    }

    /**
     * Returns whether the lease is lost: an extension was refused (the receipt handle expired),
     * someone {@linkplain #markLeaseLost() marked} it lost, or the {@linkplain #leaseHeldUntil
     * bound} passed without a confirmed extension. The work may go on, but its result may be
     * refused and another worker may be running it; a handler should stop early. Cheap: one
     * volatile read, plus one ticker reading when a bound is set.
     *
     * @return true once the lease is known or presumed lost
     */
    public boolean isLeaseLost() {
      if (leaseLost) {
        return true;
      }
      if (heldUntilKnown && ticker.read() - heldUntil >= 0) {
        leaseLost = true;
        STATE.compareAndSet(this, IDLE, LOST);
        log.warn("The lease of message {} ran out without a confirmed extension (no beat, or the"
            + " store could not be reached); treating it as lost so that the work stops before"
            + " another worker can take the message over", message.id());
        return true;
      }
      return false;
    }

    /**
     * Returns how long the lease surely still holds by this process's monotonic clock: the
     * {@linkplain #leaseHeldUntil bound} minus now, so a caller that needs time to stop its work
     * (to kill a process tree, say) can start before the lease may run out. Cheap: one ticker
     * reading.
     *
     * @return the time left (zero or negative once the bound passed, or the lease is known lost),
     *     or empty when no bound was set
     */
    public java.util.Optional<Duration> leaseSurelyHeldFor() {
      if (!heldUntilKnown) {
        return java.util.Optional.empty();
      }
      if (leaseLost) {
        return java.util.Optional.of(Duration.ZERO);
      }
      return java.util.Optional.of(Duration.ofNanos(heldUntil - ticker.read()));
    }

    /**
     * Returns whether the message was found cancelled (an extension was refused with {@link
     * MessageCancelledException}, or someone {@linkplain #markCancelled() marked} it).
     *
     * @return true once known
     */
    public boolean isCancelled() {
      return cancelled;
    }

    /**
     * Marks the lease as lost, for callers that learn it another way (for example a refused
     * acknowledgement); stops further extensions.
     */
    public void markLeaseLost() {
      leaseLost = true;
      STATE.compareAndSet(this, IDLE, LOST);
    }

    /** Marks the message cancelled (and so its lease lost); stops further extensions. */
    public void markCancelled() {
      cancelled = true;
      markLeaseLost();
    }

    /**
     * Tells the attachment until when (a reading of the heartbeat's ticker) the lease surely holds
     * without an extension, such as the start of the receive that delivered the message plus its
     * visibility timeout. From then on every confirmed extension moves the bound to its own start
     * plus the extension, and {@link #isLeaseLost()} turns true once the bound passes.
     *
     * @param tickerNanos the bound, a reading of the heartbeat's ticker
     * @return this attachment
     */
    public Attachment leaseHeldUntil(long tickerNanos) {
      this.heldUntil = tickerNanos;
      this.heldUntilKnown = true;
      return this;
    }

    /**
     * Stops extensions from {@code tickerNanos} on (a reading of the heartbeat's ticker): the
     * work's deadline. Beats after it do not extend the lease.
     *
     * @param tickerNanos the deadline
     * @return this attachment
     */
    public Attachment extendUntil(long tickerNanos) {
      this.extendUntil = tickerNanos;
      this.extendUntilKnown = true;
      return this;
    }

    /**
     * Returns how many extensions succeeded.
     *
     * @return the count
     */
    public long extensions() {
      return extensions;
    }

    /** Detaches from the heartbeat and frees the extender for the next message; idempotent. */
    @Override
    public void close() {
      if ((int) STATE.getAndSet(this, CLOSED) == CLOSED) {
        return;
      }
      super.close();
      extender.current.compareAndSet(this, null);
    }

    @Override
    public String toString() {
      return "LeaseExtender.Attachment[message="
          + message.id()
          + ", extensions="
          + extensions
          + ", leaseLost="
          + leaseLost
          + (cancelled ? ", cancelled" : "")
          + "]";
    }
  }
}
