package dev.tether.jdbc;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns expired leases into retries, or into failures past the item's {@code maxAttempts}, with
 * one {@code lease_expired} checkpoint per expiry; cleans up old checkpoints and finished items.
 *
 * <p>The sweep is not needed for correctness — acquirers take expired items themselves — it keeps
 * queues that nobody polls tidy and the audit trail prompt. Each pass reads expired leases without
 * locking, then reclaims each with a conditional update that matches only if the row still holds
 * the same token, is still in progress and is still expired: a renewal or takeover that lands
 * between the read and the write makes the update match nothing, and the renewed lease survives.
 * A lease reclaimed by an acquirer is therefore never counted twice.
 *
 * <p>Thread-safe. {@link #scanAndRecover()} blocks for the pass. The background thread ({@code
 * tether-recovery-sweep}) logs and counts every failure and keeps going. {@link #stop()} is
 * idempotent.
 */
public final class RecoverySweep implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RecoverySweep.class);

  private final TetherStore store;
  private final RecoverySweepConfig config;
  private final Clock clock;
  private final ExpiredLeases expiredLeases;
  private final AtomicReference<SweepStatistics> stats =
      new AtomicReference<>(new SweepStatistics(false, 0, 0, 0, 0, 0, 0, null));
  private final ReentrantLock lifecycle = new ReentrantLock();
  private final Condition wake = lifecycle.newCondition();
  private final Object passLock = new Object();
  private Thread thread;
  private boolean stopRequested;
  private long lastCleanupNanos;
  private boolean cleanedOnce;
  private volatile Runnable afterReadHook = () -> {};

  /**
   * Creates a sweep with the default configuration.
   *
   * @param store the store
   */
  public RecoverySweep(TetherStore store) {
    this(store, RecoverySweepConfig.defaults());
  }

  /**
   * Creates a sweep.
   *
   * @param store the store
   * @param config the options
   */
  public RecoverySweep(TetherStore store, RecoverySweepConfig config) {
    this.store = Objects.requireNonNull(store, "store");
    this.config = Objects.requireNonNull(config, "config");
    this.clock = store.effectiveClock(config.clock());
    this.expiredLeases = store.sql().expiredLeases();
  }

  /** Test hook: runs between the read of expired leases and their conditional reclaim. */
  void afterReadHook(Runnable hook) {
    this.afterReadHook = Objects.requireNonNull(hook, "hook");
  }

  /**
   * Runs one pass: reclaims every lease expired at the start of each batch, then runs retention
   * cleanup if it is enabled and due.
   *
   * @return the pass's counts
   */
  public RecoveryStats scanAndRecover() {
    synchronized (passLock) {
      long start = System.nanoTime();
      int found = 0;
      int recovered = 0;
      int failed = 0;
      int checkpoints = 0;
      int errors = 0;
      while (true) {
        List<ExpiredLeases.Expired> expired;
        try {
          expired = store.read("scanning for expired leases", c ->
              expiredLeases.findExpired(c, null, store.now(c, clock), config.batchSize(), false));
        } catch (RuntimeException e) {
          LOG.warn("Recovery sweep could not scan for expired leases; will retry next pass", e);
          errors++;
          break;
        }
        if (expired.isEmpty()) {
          break;
        }
        afterReadHook.run();
        found += expired.size();
        ExpiredLeases.ReclaimResult r;
        try {
          r = store.write("reclaiming " + expired.size() + " expired leases",
              c -> expiredLeases.reclaim(c, expired, store.now(c, clock)));
        } catch (RuntimeException e) {
          LOG.warn("Recovery sweep could not reclaim {} expired leases; will retry next pass",
              expired.size(), e);
          errors++;
          break;
        }
        recovered += r.recovered();
        failed += r.failed();
        checkpoints += r.checkpoints();
        if (expired.size() < config.batchSize() || r.recovered() + r.failed() == 0) {
          break;
        }
      }
      if (config.cleanupEnabled() && cleanupDue()) {
        try {
          cleanup();
        } catch (RuntimeException e) {
          LOG.warn("Recovery sweep retention cleanup failed; will retry next pass", e);
          errors++;
        }
      }
      RecoveryStats s = new RecoveryStats(found, recovered, failed, checkpoints, errors,
          Duration.ofNanos(System.nanoTime() - start));
      stats.updateAndGet(t -> t.plus(s));
      if (recovered + failed > 0 || errors > 0) {
        LOG.info("Recovery sweep: {}", s);
      } else {
        LOG.debug("Recovery sweep: {}", s);
      }
      return s;
    }
  }

  private boolean cleanupDue() {
    long now = System.nanoTime();
    if (!cleanedOnce || now - lastCleanupNanos >= config.cleanupInterval().toNanos()) {
      cleanedOnce = true;
      lastCleanupNanos = now;
      return true;
    }
    return false;
  }

  /**
   * Deletes checkpoints beyond the per-item limit and older than the configured age, and finished
   * items older than the configured age (with their checkpoints).
   *
   * @return how many rows were deleted
   */
  public long cleanup() {
    return store.write("cleaning up old checkpoints and finished items", c -> {
      Instant now = store.now(c, clock);
      long deleted = store.sql().purges().retain(c,
          config.finishedItemMaxAge() == null ? null : now.minus(config.finishedItemMaxAge()),
          config.checkpointMaxAge() == null ? null : now.minus(config.checkpointMaxAge()),
          config.checkpointsPerItem());
      if (deleted > 0) {
        LOG.info("Recovery sweep retention cleanup deleted {} rows", deleted);
      }
      return deleted;
    });
  }

  /**
   * Returns the totals so far.
   *
   * @return a snapshot
   */
  public SweepStatistics statistics() {
    return stats.get();
  }

  /**
   * Starts the background thread {@code tether-recovery-sweep}, which runs a pass every scan
   * interval.
   *
   * @throws IllegalStateException if already running
   */
  public void start() {
    lifecycle.lock();
    try {
      if (thread != null) {
        throw new IllegalStateException("the recovery sweep is already running; stop() it first");
      }
      stopRequested = false;
      thread = new Thread(this::runLoop, "tether-recovery-sweep");
      thread.setDaemon(true);
      stats.updateAndGet(s -> s.withRunning(true));
      thread.start();
      LOG.info("Recovery sweep started: {}", config);
    } finally {
      lifecycle.unlock();
    }
  }

  /**
   * Returns whether the background thread runs.
   *
   * @return true while started and not stopped
   */
  public boolean isRunning() {
    lifecycle.lock();
    try {
      return thread != null;
    } finally {
      lifecycle.unlock();
    }
  }

  /**
   * Stops the background thread and waits up to 10 s for it; idempotent.
   */
  public void stop() {
    Thread t;
    lifecycle.lock();
    try {
      t = thread;
      if (t == null) {
        return;
      }
      stopRequested = true;
      thread = null;
      wake.signalAll();
    } finally {
      lifecycle.unlock();
    }
    try {
      t.join(10_000);
      if (t.isAlive()) {
        LOG.warn("Recovery sweep thread did not stop within 10 s (a pass is still running)");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    stats.updateAndGet(s -> s.withRunning(false));
    LOG.info("Recovery sweep stopped");
  }

  /** Same as {@link #stop()}. */
  @Override
  public void close() {
    stop();
  }

  private void runLoop() {
    while (true) {
      try {
        scanAndRecover();
      } catch (Throwable t) {
        // One runner catches everything so the sweep never dies silently.
        LOG.error("Recovery sweep pass failed unexpectedly; continuing", t);
        stats.updateAndGet(s -> s.plus(new RecoveryStats(0, 0, 0, 0, 1, Duration.ZERO)));
      }
      lifecycle.lock();
      try {
        if (stopRequested) {
          return;
        }
        wake.awaitNanos(config.scanInterval().toNanos());
        if (stopRequested) {
          return;
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } finally {
        lifecycle.unlock();
      }
    }
  }
}
