package dev.tether.jdbc;

import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The long poll shared by every waiting acquisition ({@link LeaseManager#acquire(AcquireRequest,
 * Duration)}, {@link JdbcMailbox#receive}): try, and while nothing came and time is left, wait for
 * the store's wake-up — an enqueue in this process, or on PostgreSQL with notifications any
 * process's {@code NOTIFY} — or at most one poll interval, which finds what no signal announces
 * (delayed items coming due, expired leases, enqueues of other processes on SQLite).
 */
final class AcquireWait {
  private AcquireWait() {}

  /**
   * Runs {@code attempt} until it returns leases, {@code waitTime} has passed, {@code stop}
   * holds, or the thread is interrupted (empty result, interrupt flag kept).
   */
  static <L> List<L> acquire(
      TetherStore store,
      Supplier<List<L>> attempt,
      Duration waitTime,
      Duration pollInterval,
      BooleanSupplier stop) {
    long deadline = System.nanoTime() + waitTime.toNanos();
    while (true) {
      if (stop.getAsBoolean() || Thread.currentThread().isInterrupted()) {
        return List.of();
      }
      long seen = store.itemsGeneration();
      List<L> got = attempt.get();
      if (!got.isEmpty()) {
        return got;
      }
      long remaining = deadline - System.nanoTime();
      if (remaining <= 0) {
        return List.of();
      }
      long waitMillis = Math.max(1, Math.min(pollInterval.toMillis(), remaining / 1_000_000L));
      if (!store.awaitItems(seen, waitMillis)) {
        return List.of();
      }
    }
  }
}
