package dev.tether.jdbc;

import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The long poll shared by every waiting acquisition ({@link LeaseManager#acquire(AcquireRequest,
 * Duration)}, {@link JdbcMailbox#receive}): look, and while nothing came and time is left, wait as
 * {@link Wakeups} decides — one receiver of the queue per signal (an enqueue in this process, or
 * on PostgreSQL another process's wake-up, {@link WakeRoster}), and one receiver of the queue at a
 * time looking when the queue's next look is due. A receiver that takes a full batch signals
 * again, since more items may be waiting.
 *
 * <p>Where the engine has a read-only {@linkplain StoreEngine#probe probe} (PostgreSQL), an
 * unfiltered receiver whose look found nothing probes the queue once to learn when the next
 * delayed item or lease comes due, so that its queue is looked at then rather than at the next
 * poll, and the poller's periodic look is the probe alone, followed by an acquisition only when
 * the probe finds something to take. A receive that starts right after an empty look with no
 * signal since skips its own look ({@link Wakeups#start}), unless it does not wait at all. So an idle process costs one
 * read-only statement per queue per poll interval, whatever its number of loops.
 */
final class AcquireWait {
  /** The soonest a queue is looked at again after a look found nothing (guards against spins). */
  static final long MIN_RELOOK_NANOS = 50_000_000L;

  private AcquireWait() {}

  /**
   * Runs {@code attempt} until it returns leases, {@code waitTime} has passed, {@code stop}
   * holds, or the thread is interrupted (empty result, interrupt flag kept).
   *
   * @param probe the read-only look at the queue (null where the engine has none)
   * @param realClock whether the caller's time is the database's or the system's (a receive on a
   *     clock of its own, as tests set, never skips its look: time may have jumped)
   */
  static List<Lease> acquire(
      TetherStore store,
      AcquireRequest request,
      Supplier<List<Lease>> attempt,
      Supplier<QueueProbe> probe,
      boolean realClock,
      Duration waitTime,
      Duration pollInterval,
      BooleanSupplier stop) {
    Wakeups wakeups = store.wakeups();
    String queue = request.queue();
    boolean unfiltered = request.workType() == null && request.taskId() == null;
    long pollNanos = pollInterval.toNanos();
    long deadline = System.nanoTime() + waitTime.toNanos();
    // a receive that does not wait (wait time 0) always looks
    Wakeups.Start start = !unfiltered || !realClock || waitTime.isZero()
        ? Wakeups.Start.LOOK : wakeups.start(queue, wakeups.generation(), pollNanos);
    boolean look = start == Wakeups.Start.LOOK
        || (start == Wakeups.Start.DUE && dueLook(wakeups, queue, true, probe, pollNanos));
    while (true) {
      if (stop.getAsBoolean() || Thread.currentThread().isInterrupted()) {
        return List.of();
      }
      long seen = wakeups.generation();
      if (look) {
        wakeups.countLook();
        List<Lease> got = attempt.get();
        if (!got.isEmpty()) {
          if (unfiltered) {
            // a lease this receiver holds may expire (its worker dies in-process, or stops
            // beating): the queue is looked at by then, not only at the next poll
            wakeups.dueBy(queue, System.nanoTime() + request.leaseDuration().toNanos());
          }
          if (got.size() == request.maxItems()) {
            wakeups.signal(); // a full batch: more may be waiting for the other receivers
          }
          return got;
        }
        if (unfiltered) {
          wakeups.lookedEmpty(queue, seen, nextLook(probe == null ? null : probe(wakeups, probe), pollNanos));
        }
      }
      if (deadline - System.nanoTime() <= 0) {
        return List.of();
      }
      store.beforeWait(queue);
      long remaining = deadline - System.nanoTime();
      if (remaining <= 0) {
        return List.of();
      }
      switch (wakeups.await(queue, seen, remaining, pollNanos, unfiltered)) {
        case SIGNAL:
          look = true;
          break;
        case LOOK:
          look = dueLook(wakeups, queue, unfiltered, probe, pollNanos);
          break;
        default: // TIMEOUT, INTERRUPTED
          return List.of();
      }
    }
  }

  /**
   * The queue's periodic look: where the engine has a probe, the probe alone, and true (acquire)
   * only when it finds something to take; else true.
   */
  private static boolean dueLook(
      Wakeups wakeups, String queue, boolean unfiltered, Supplier<QueueProbe> probe, long pollNanos) {
    if (!unfiltered || probe == null) {
      return true;
    }
    long before = wakeups.generation();
    QueueProbe found = probe(wakeups, probe);
    if (found.ready()) {
      return true;
    }
    wakeups.lookedEmpty(queue, before, nextLook(found, pollNanos));
    return false;
  }

  private static QueueProbe probe(Wakeups wakeups, Supplier<QueueProbe> probe) {
    wakeups.countProbe();
    return probe.get();
  }

  /**
   * When a queue whose look found nothing is next looked at: at the poll interval, or when the
   * probe says the next item or lease comes due, but not sooner than {@link #MIN_RELOOK_NANOS}
   * (an item the probe sees as ready may be locked by another acquisition).
   */
  private static long nextLook(QueueProbe found, long pollNanos) {
    long now = System.nanoTime();
    long in = pollNanos;
    if (found != null && (found.ready() || found.dueInMillis() >= 0)) {
      long due = found.ready() ? 0 : found.dueInMillis() * 1_000_000L;
      in = Math.min(in, Math.max(MIN_RELOOK_NANOS, due));
    }
    return now + in;
  }
}
