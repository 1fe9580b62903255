package dev.tether.jdbc;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

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
 *   <li>While a {@linkplain #sharedPolling shared poller} runs (PostgreSQL's notification
 *       listener, looking for due items of every waiting queue on its own connection and
 *       signalling when it finds some), receivers whose poll interval is not shorter than its own
 *       do not poll, and a receive that starts while the queue's last look found nothing, with no
 *       signal since and less than a poll interval ago, waits instead of looking again
 *       ({@link #recentlyEmpty}).
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

  /** The last look at a queue that found nothing: the signal generation before it, and when. */
  private static final class EmptyLook {
    final long generation;
    final long at;

    EmptyLook(long generation, long at) {
      this.generation = generation;
      this.at = at;
    }
  }

  private final Map<String, Queue> queues = new HashMap<>();
  private final Map<String, EmptyLook> emptyLooks = new HashMap<>(); // guarded by this
  private long generation; // guarded by this
  private long wakeAllGeneration; // guarded by this
  private boolean sharedPoll; // guarded by this
  private long sharedPollNanos; // guarded by this
  private final AtomicLong looks = new AtomicLong();
  private final AtomicLong sharedPolls = new AtomicLong();
  private final AtomicLong sharedPollHits = new AtomicLong();

  /**
   * Turns the shared poller on (it looks every {@code pollNanos}) or off (receivers poll again,
   * one per queue).
   */
  synchronized void sharedPolling(boolean on, long pollNanos) {
    sharedPoll = on;
    sharedPollNanos = pollNanos;
    if (!on) {
      emptyLooks.clear();
    }
    notifyAll();
  }

  /** The queues with a waiting receiver now. */
  synchronized List<String> waitingQueues() {
    return new ArrayList<>(queues.keySet());
  }

  /** Whether a receiver of {@code queue} (any queue when empty) waits now. */
  synchronized boolean hasWaiter(String queue) {
    return queue.isEmpty() ? !queues.isEmpty() : queues.containsKey(queue);
  }

  /** A look at {@code queue} (by a receiver or the shared poller) that read {@code seen} found nothing. */
  synchronized void nothingFound(String queue, long seen) {
    emptyLooks.put(queue, new EmptyLook(seen, System.nanoTime()));
  }

  /** A look at {@code queue} found items. */
  synchronized void found(String queue) {
    emptyLooks.remove(queue);
  }

  /**
   * Whether a receive of {@code queue} that may wait {@code waitNanos} and polls every {@code
   * pollNanos} can skip its look: the shared poller runs, the queue's last look found nothing
   * with no signal since, and it is recent enough (less than 1.5 intervals ago: the poller is
   * alive, its next look is due within the interval) for the receive to wait for the poller's
   * next look instead (a wait of at least half an interval). What the look would have found
   * silently (a lease expiring, a delayed item coming due) is found by the poller's next look,
   * within the poll interval, as it would be by a polling receiver.
   */
  synchronized boolean recentlyEmpty(String queue, long waitNanos, long pollNanos) {
    if (!sharedPoll || pollNanos < sharedPollNanos || waitNanos < sharedPollNanos / 2) {
      return false;
    }
    EmptyLook e = emptyLooks.get(queue);
    return e != null && e.generation == generation
        && System.nanoTime() - e.at < sharedPollNanos + sharedPollNanos / 2;
  }

  /** Counts one look at the database by a receiver. */
  void looked() {
    looks.incrementAndGet();
  }

  /** Counts one look by the shared poller. */
  void sharedPolled() {
    sharedPolls.incrementAndGet();
  }

  /** Counts one look by the shared poller that found a due item (and signalled). */
  void sharedPollFound() {
    sharedPollHits.incrementAndGet();
  }

  /** Looks by the shared poller that found a due item so far (tests). */
  long sharedPollHits() {
    return sharedPollHits.get();
  }

  /** Looks at the database by receivers so far (tests). */
  long looks() {
    return looks.get();
  }

  /** Looks by the shared poller so far (tests). */
  long sharedPolls() {
    return sharedPolls.get();
  }

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
          boolean shared = sharedPoll && pollNanos >= sharedPollNanos;
          if (shared && q.poller == me) {
            q.poller = null;
          } else if (!shared && q.poller == null) {
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
