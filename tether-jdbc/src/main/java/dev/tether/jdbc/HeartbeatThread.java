package dev.tether.jdbc;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Renews one lease at a fixed interval on its own thread, whether or not the handler makes
 * progress.
 *
 * <p><b>Opt-in; beats are the default.</b> Tether extends a lease because work happened: the
 * handler beats a {@code Heartbeat} and a {@code LeaseExtender} renews on those beats, so a
 * handler that hangs stops renewing, its lease expires and the item is redelivered to a healthy
 * worker. A timer cannot tell a hung handler from a working one and keeps a stuck item leased
 * forever. Use this only for handlers that cannot beat (one long blocking call into code you do
 * not control), and bound those handlers some other way.
 *
 * <p>Each renewal is {@link LeaseManager#renew}, the path a beat's extension takes too: with
 * group commit on (the default) it joins the store's batch of renewals due at the same time,
 * conditional on (item, token) like every renewal, and it borrows a pooled connection (never the
 * worker's). When the lease is lost — taken over ({@link LeaseConflictException}), reclaimed
 * ({@link LeaseExpiredException}) or already finalized — {@code onLeaseLost} runs at once, on the
 * heartbeat thread, and the thread ends. Other failures (database unreachable) are retried at the
 * next interval; after {@code maxFailures} consecutive failures the lease is presumed lost and
 * {@code onLeaseLost} runs. The callback runs at most once; its exceptions are logged.
 *
 * <p>Thread-safe. The thread is named {@code tether-lease-renewal-<itemId>}. {@link #stop()} is
 * idempotent.
 */
public final class HeartbeatThread implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HeartbeatThread.class);

  /** Default renewal interval: 30 s. */
  public static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(30);
  /** Default lease extension per renewal: 300 s. */
  public static final Duration DEFAULT_LEASE_DURATION = Duration.ofSeconds(300);
  /** Default consecutive failures before the lease is presumed lost: 3. */
  public static final int DEFAULT_MAX_FAILURES = 3;

  private final LeaseManager leaseManager;
  private final long itemId;
  private final long token;
  private final Duration interval;
  private final Duration leaseDuration;
  private final int maxFailures;
  private final Runnable onLeaseLost;
  private final CountDownLatch stopSignal = new CountDownLatch(1);
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicBoolean lost = new AtomicBoolean();
  private final AtomicInteger consecutiveFailures = new AtomicInteger();
  private final AtomicInteger renewals = new AtomicInteger();
  private volatile Thread thread;

  /**
   * Creates a heartbeat for one lease with the defaults ({@link #DEFAULT_INTERVAL}, {@link
   * #DEFAULT_LEASE_DURATION}, {@link #DEFAULT_MAX_FAILURES}).
   *
   * @param leaseManager the manager that acquired the lease
   * @param lease the lease to renew
   * @param onLeaseLost called once when the lease is lost, or null
   */
  public HeartbeatThread(LeaseManager leaseManager, Lease lease, Runnable onLeaseLost) {
    this(leaseManager, lease, DEFAULT_INTERVAL, DEFAULT_LEASE_DURATION, DEFAULT_MAX_FAILURES, onLeaseLost);
  }

  /**
   * Creates a heartbeat for one lease.
   *
   * @param leaseManager the manager that acquired the lease
   * @param lease the lease to renew
   * @param interval time between renewals; positive and less than half of {@code leaseDuration}
   * @param leaseDuration extension per renewal (expiry becomes max(current, now + this))
   * @param maxFailures consecutive non-fencing failures tolerated; at least 1
   * @param onLeaseLost called once when the lease is lost, or null
   * @throws IllegalArgumentException naming the value and the rule
   */
  public HeartbeatThread(
      LeaseManager leaseManager,
      Lease lease,
      Duration interval,
      Duration leaseDuration,
      int maxFailures,
      Runnable onLeaseLost) {
    this.leaseManager = Objects.requireNonNull(leaseManager, "leaseManager");
    Objects.requireNonNull(lease, "lease");
    this.itemId = lease.itemId();
    this.token = lease.token();
    this.interval = Objects.requireNonNull(interval, "interval");
    this.leaseDuration = Objects.requireNonNull(leaseDuration, "leaseDuration");
    if (interval.isNegative() || interval.isZero()) {
      throw new IllegalArgumentException("interval must be positive, was " + interval);
    }
    if (leaseDuration.compareTo(interval.multipliedBy(2)) <= 0) {
      throw new IllegalArgumentException("interval (" + interval + ") must be less than half of"
          + " leaseDuration (" + leaseDuration + ") so that one missed renewal does not lose the lease");
    }
    if (maxFailures < 1) {
      throw new IllegalArgumentException("maxFailures must be >= 1, was " + maxFailures);
    }
    this.maxFailures = maxFailures;
    this.onLeaseLost = onLeaseLost == null ? () -> {} : onLeaseLost;
  }

  /**
   * Starts the renewal thread.
   *
   * @throws IllegalStateException if already started (a heartbeat runs once)
   */
  public void start() {
    if (!started.compareAndSet(false, true)) {
      throw new IllegalStateException("heartbeat of item " + itemId + " was already started");
    }
    Thread t = new Thread(this::run, "tether-lease-renewal-" + itemId);
    t.setDaemon(true);
    thread = t;
    t.start();
  }

  /** Stops renewing and waits up to 5 s for the thread; idempotent. */
  public void stop() {
    stop(Duration.ofSeconds(5));
  }

  /**
   * Stops renewing and waits up to {@code timeout} for the thread; idempotent.
   *
   * @param timeout the wait bound
   */
  public void stop(Duration timeout) {
    stopSignal.countDown();
    Thread t = thread;
    if (t != null && t != Thread.currentThread()) {
      try {
        t.join(Math.max(1, timeout.toMillis()));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Same as {@link #stop()}. */
  @Override
  public void close() {
    stop();
  }

  /**
   * Returns whether the renewal thread is alive.
   *
   * @return true while renewing
   */
  public boolean isRunning() {
    Thread t = thread;
    return t != null && t.isAlive();
  }

  /**
   * Returns whether the lease was found lost.
   *
   * @return true once {@code onLeaseLost} was (or is being) called
   */
  public boolean isLeaseLost() {
    return lost.get();
  }

  /**
   * Returns how many renewals succeeded.
   *
   * @return the count
   */
  public int renewals() {
    return renewals.get();
  }

  /**
   * Returns the current run of consecutive failed renewals.
   *
   * @return the count
   */
  public int consecutiveFailures() {
    return consecutiveFailures.get();
  }

  private void run() {
    try {
      while (!stopSignal.await(interval.toNanos(), TimeUnit.NANOSECONDS)) {
        try {
          leaseManager.renew(itemId, token, leaseDuration);
          renewals.incrementAndGet();
          consecutiveFailures.set(0);
        } catch (LeaseLostException | ItemFinalizedException e) {
          LOG.warn("Lease of item {} (token {}) is lost: {}", itemId, token, e.getMessage());
          leaseLost();
          return;
        } catch (RuntimeException e) {
          int n = consecutiveFailures.incrementAndGet();
          if (n >= maxFailures) {
            LOG.error("Renewal of item {} failed {} times in a row; presuming the lease lost", itemId, n, e);
            leaseLost();
            return;
          }
          LOG.warn("Renewal of item {} failed ({} of {} tolerated); retrying in {}", itemId, n, maxFailures, interval, e);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Throwable t) {
      LOG.error("Heartbeat thread of item {} failed unexpectedly", itemId, t);
    }
  }

  private void leaseLost() {
    if (lost.compareAndSet(false, true)) {
      try {
        onLeaseLost.run();
      } catch (RuntimeException e) {
        LOG.error("onLeaseLost callback of item {} threw", itemId, e);
      }
    }
  }
}
