package dev.tether.jdbc;

import java.util.HashMap;
import java.util.Map;

/**
 * How the waiting receivers of one store share their wake-ups, so that an idle process costs the
 * database one look per queue per poll interval, and one new item wakes one receiver, not all.
 *
 * <ul>
 *   <li>A <em>signal</em> ({@link #signal()}: an enqueue in this process, a notification from
 *       another process) wakes one waiting receiver of each queue; that receiver looks for items,
 *       and if it takes a full batch it signals again, so a burst still reaches every receiver.
 *   <li>Of a queue's waiting receivers, one at a time is its <em>poller</em>: it also wakes when
 *       the queue has not been looked at for a poll interval (to find delayed items coming due,
 *       expired leases and, where no notification arrives, other processes' enqueues); the others
 *       wait for a signal or their own wait time. A poller that leaves hands the role on.
 *   <li>{@link #wakeAll()} (a mailbox or the store closing) wakes every waiter.
 * </ul>
 *
 * <p>Thread-safe: one monitor guards the state; waiting releases it.
 */
final class Wakeups {
  /** The waiters of one queue. Guarded by the monitor of the enclosing instance. */
  private static final class Queue {
    int waiting;
    Thread poller;
    /** When the queue was last looked at by a waiting receiver (System.nanoTime()). */
    long lastLook = System.nanoTime();
    /** The signal generation one waiter of this queue has already taken. */
    long claimed;
  }

  private final Map<String, Queue> queues = new HashMap<>();
  private long generation; // guarded by this
  private long wakeAllGeneration; // guarded by this

  /** New items may be available: wakes one waiter of each queue. */
  synchronized void signal() {
    generation++;
    notifyAll();
  }

  /** Wakes every waiter (closing). */
  synchronized void wakeAll() {
    generation++;
    wakeAllGeneration++;
    notifyAll();
  }

  /**
   * The signal count so far: read before looking for items and pass to {@link #await}, so that a
   * signal in between is not missed.
   */
  synchronized long generation() {
    return generation;
  }

  /**
   * Waits, as a receiver of {@code queue} that just looked and found nothing, until it should
   * look again: a signal after {@code seen} that no other waiter of the queue took, its turn to
   * poll (at most every {@code pollNanos} per queue), a {@link #wakeAll()}, or {@code maxNanos}
   * (its own wait time) passed. Returns false if interrupted (the interrupt flag is set again).
   */
  boolean await(String queue, long seen, long maxNanos, long pollNanos) {
    Thread me = Thread.currentThread();
    long end = System.nanoTime() + maxNanos;
    synchronized (this) {
      Queue q = queues.computeIfAbsent(queue, k -> new Queue());
      long wakeAllSeen = wakeAllGeneration;
      q.waiting++;
      try {
        while (true) {
          if (wakeAllGeneration != wakeAllSeen) {
            return true;
          }
          if (generation != seen) {
            if (q.claimed != generation) {
              q.claimed = generation; // this waiter looks; the others of the queue wait on
              return true;
            }
            seen = generation;
          }
          if (q.poller == null) {
            q.poller = me;
          }
          long now = System.nanoTime();
          long until = end;
          if (q.poller == me) {
            long pollAt = q.lastLook + pollNanos;
            if (pollAt - now <= 0) {
              q.lastLook = now;
              return true;
            }
            until = pollAt - end < 0 ? pollAt : end;
          }
          long left = until - now;
          if (left <= 0) {
            return true;
          }
          try {
            long millis = left / 1_000_000L;
            wait(millis, (int) (left % 1_000_000L));
          } catch (InterruptedException e) {
            me.interrupt();
            return false;
          }
        }
      } finally {
        q.waiting--;
        if (q.poller == me) {
          q.poller = null;
          if (q.waiting > 0) {
            notifyAll(); // hand the poller role on
          }
        }
        if (q.waiting == 0) {
          queues.remove(queue);
        }
      }
    }
  }
}
