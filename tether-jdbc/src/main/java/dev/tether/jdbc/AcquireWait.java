package dev.tether.jdbc;

import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The long poll shared by every waiting acquisition ({@link LeaseManager#acquire(AcquireRequest,
 * Duration)}, {@link JdbcMailbox#receive}): try, and while nothing came and time is left, wait as
 * {@link Wakeups} decides — one receiver of the queue per signal (an enqueue in this process, or
 * on PostgreSQL with notifications any process's {@code NOTIFY}), and one receiver of the queue
 * at a time polling at the poll interval (delayed items coming due, expired leases, enqueues of
 * other processes on SQLite). A receiver that takes a full batch signals again, since more items
 * may be waiting.
 */
final class AcquireWait {
  private AcquireWait() {}

  /**
   * Runs {@code attempt} until it returns leases, {@code waitTime} has passed, {@code stop}
   * holds, or the thread is interrupted (empty result, interrupt flag kept).
   */
  static List<Lease> acquire(
      TetherStore store,
      AcquireRequest request,
      Supplier<List<Lease>> attempt,
      Duration waitTime,
      Duration pollInterval,
      BooleanSupplier stop) {
    Wakeups wakeups = store.wakeups();
    long deadline = System.nanoTime() + waitTime.toNanos();
    while (true) {
      if (stop.getAsBoolean() || Thread.currentThread().isInterrupted()) {
        return List.of();
      }
      long seen = wakeups.generation();
      List<Lease> got = attempt.get();
      if (!got.isEmpty()) {
        if (got.size() == request.maxItems()) {
          wakeups.signal(); // a full batch: more may be waiting for the other receivers
        }
        return got;
      }
      long remaining = deadline - System.nanoTime();
      if (remaining <= 0) {
        return List.of();
      }
      if (!wakeups.await(request.queue(), seen, remaining, pollInterval.toNanos())) {
        return List.of();
      }
    }
  }
}
