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
 * may be waiting. A receive that starts soon after a look at its queue found nothing, with no
 * signal since, waits instead of looking again while PostgreSQL's listener polls for the process
 * ({@link Wakeups#recentlyEmpty}; with the wake-up roster only).
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
    boolean unfiltered = request.workType() == null && request.taskId() == null;
    // the empty-look bookkeeping serves only the roster's shared poller (PostgreSQL's listener)
    boolean roster = store.notifier() != null;
    while (true) {
      if (stop.getAsBoolean() || Thread.currentThread().isInterrupted()) {
        return List.of();
      }
      long seen = wakeups.generation();
      long left = deadline - System.nanoTime();
      // at the end of the wait there is nothing to wait for: only whether the last look is recent
      long waitable = left <= 0 ? Long.MAX_VALUE : left;
      List<Lease> got;
      if (!roster) {
        got = attempt.get();
      } else if (wakeups.recentlyEmpty(request.queue(), waitable, pollInterval.toNanos())) {
        got = List.of(); // looked at (by anyone here) too recently to look again: wait
      } else {
        wakeups.looked();
        got = attempt.get();
        if (got.isEmpty() && unfiltered) {
          wakeups.nothingFound(request.queue(), seen);
        } else if (!got.isEmpty()) {
          wakeups.found(request.queue());
        }
      }
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
