package dev.tether.jdbc;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;

/**
 * How the waiting receivers of one store share their wake-ups, so that an idle process costs the
 * database one look per queue per poll interval (or when something comes due), and one new item
 * wakes one receiver, not all.
 *
 * <ul>
 *   <li>A <em>signal</em> ({@link #signal()}: an enqueue in this process, a wake-up from another
 *       process) wakes one waiting receiver of each queue; that receiver looks for items, and if
 *       it takes a full batch it signals again, so a burst still reaches every receiver.
 *   <li>Of a queue's waiting receivers, one at a time is its <em>poller</em>: it also wakes when
 *       the queue's next look is due ({@link Wake#LOOK}): a poll interval after the last look
 *       that found nothing, or sooner when that look learnt that a delayed item or a lease comes
 *       due ({@link #lookedEmpty}). The others wait for a signal or their own wait time. A poller
 *       that leaves hands the role on.
 *   <li>A receive that starts while its queue's last look found nothing, no signal came since,
 *       and the next look is not due yet {@linkplain #start skips its own look} and waits: an
 *       idle loop that calls {@code receive} again after its wait time costs no statement.
 *   <li>{@link #wakeAll()} (a mailbox or the store closing) wakes every waiter.
 * </ul>
 *
 * <p>Thread-safe: one monitor guards the state; waiting releases it.
 */
final class Wakeups {
  /** Why {@link #await} returned. */
  enum Wake {
    /** A signal (or a wake-all): look for items. */
    SIGNAL,
    /** This receiver's turn to look at the queue as its poller. */
    LOOK,
    /** The receiver's own wait time is over. */
    TIMEOUT,
    /** Interrupted (the flag is set again). */
    INTERRUPTED
  }

  /** Queues remembered without waiters (their last empty look), beyond which the oldest go. */
  private static final int REMEMBERED = 1024;

  /** The waiters of one queue. Guarded by the monitor of the enclosing instance. */
  private static final class Queue {
    int waiting;
    /** Of {@link #waiting}, those that take any item of the queue (no work type or task filter). */
    int unfilteredWaiting;
    Thread poller;
    /** Whether the poller takes only some items (a filtered receiver). */
    boolean pollerFiltered;
    /** When the queue is next looked at without a signal (System.nanoTime()). */
    long nextLook;
    /** The signal generation one waiter of this queue has already taken. */
    long claimed = -1;
    /** The signal generation at the last look that found nothing, or -1. */
    long emptyGeneration = -1;
    /** When a receiver last waited for the queue (System.nanoTime()). */
    long lastWaited = System.nanoTime();
  }

  private final Map<String, Queue> queues = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Queue> eldest) {
      return size() > REMEMBERED && eldest.getValue().waiting == 0;
    }
  };
  private long generation; // guarded by this
  private long wakeAllGeneration; // guarded by this
  /** Acquisition attempts by waiting receivers (for tests and harnesses). */
  private final LongAdder looks = new LongAdder();
  /** Read-only looks by waiting receivers (for tests and harnesses). */
  private final LongAdder probes = new LongAdder();

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
   * Whether a receiver that takes any item of {@code queue} (no work type or task filter) waits
   * for it: one that can take whatever a wake-up announces.
   */
  synchronized boolean hasUnfilteredWaiting(String queue) {
    Queue q = queues.get(queue);
    return q != null && q.unfilteredWaiting > 0;
  }

  /** Whether a receiver waits for {@code queue} (null: for any queue). */
  synchronized boolean hasWaiting(String queue) {
    if (queue == null) {
      for (Queue q : queues.values()) {
        if (q.waiting > 0) {
          return true;
        }
      }
      return false;
    }
    Queue q = queues.get(queue);
    return q != null && q.waiting > 0;
  }

  /**
   * The queues a receiver waits for now or waited for within {@code withinNanos}: those whose
   * wake-ups the store's listener takes part in ({@link WakeRoster}).
   */
  synchronized Set<String> waitedOn(long withinNanos) {
    long now = System.nanoTime();
    Set<String> out = new HashSet<>();
    for (Map.Entry<String, Queue> e : queues.entrySet()) {
      Queue q = e.getValue();
      if (q.waiting > 0 || now - q.lastWaited < withinNanos) {
        out.add(e.getKey());
      }
    }
    return out;
  }

  /** What a receive that starts should do first ({@link #start}). */
  enum Start {
    /** Look (acquire): something may have come since the queue's last look. */
    LOOK,
    /** Nothing came since the last empty look, but the queue's next look is due: take it. */
    DUE,
    /** Nothing came since the last empty look and the next is not due: wait. */
    WAIT
  }

  /**
   * What a receiver of {@code queue} that read {@code seen} does first: {@link Start#WAIT} when
   * the queue's last look found nothing at that same generation (no signal since) and its next
   * look is not due yet; {@link Start#DUE} for the first to ask once it is due (the next look is
   * then put {@code pollNanos} ahead until it says what it found; the others wait); else {@link
   * Start#LOOK}.
   */
  synchronized Start start(String queue, long seen, long pollNanos) {
    Queue q = queues.get(queue);
    if (q == null || q.emptyGeneration != seen || seen != generation) {
      return Start.LOOK;
    }
    long now = System.nanoTime();
    if (now - q.nextLook < 0) {
      return Start.WAIT;
    }
    q.nextLook = now + pollNanos;
    return Start.DUE;
  }

  void countLook() {
    looks.increment();
  }

  void countProbe() {
    probes.increment();
  }

  long looks() {
    return looks.sum();
  }

  long probes() {
    return probes.sum();
  }

  /**
   * Records that a look at {@code queue}, begun at generation {@code seen}, found nothing, and
   * when the queue should next be looked at without a signal ({@code nextLook}, System.nanoTime()).
   */
  synchronized void lookedEmpty(String queue, long seen, long nextLook) {
    Queue q = queues.computeIfAbsent(queue, k -> new Queue());
    q.emptyGeneration = seen == generation ? seen : -1;
    q.nextLook = nextLook;
    notifyAll(); // the poller waits for the new time
  }

  /** Something of {@code queue} comes due by {@code at} (a lease taken here): look by then. */
  synchronized void dueBy(String queue, long at) {
    Queue q = queues.get(queue);
    if (q != null && at - q.nextLook < 0) {
      q.nextLook = at;
      notifyAll();
    }
  }

  /**
   * Waits, as a receiver of {@code queue} that just looked (or may skip its look), until it
   * should look: a signal after {@code seen} that no other waiter of the queue took ({@link
   * Wake#SIGNAL}), its turn to look as the queue's poller ({@link Wake#LOOK}; the next look is
   * then put {@code pollNanos} ahead until the looker records what it found), a {@link
   * #wakeAll()} ({@link Wake#SIGNAL}), or {@code maxNanos} (its own wait time) passed.
   */
  Wake await(String queue, long seen, long maxNanos, long pollNanos) {
    return await(queue, seen, maxNanos, pollNanos, true);
  }

  /**
   * As {@link #await(String, long, long, long)}, for a receiver that takes any item of the queue
   * ({@code unfiltered}) or only some (a work type or task filter). A filtered receiver is the
   * queue's poller only while no unfiltered one waits: its look cannot take every item, so a due
   * time an unfiltered receiver learnt would pass with nobody able to take what came due.
   */
  Wake await(String queue, long seen, long maxNanos, long pollNanos, boolean unfiltered) {
    Thread me = Thread.currentThread();
    long end = System.nanoTime() + maxNanos;
    synchronized (this) {
      Queue q = queues.get(queue);
      if (q == null) {
        q = new Queue();
        q.nextLook = System.nanoTime() + pollNanos; // the receiver has just looked
        queues.put(queue, q);
      }
      long wakeAllSeen = wakeAllGeneration;
      q.waiting++;
      if (unfiltered) {
        q.unfilteredWaiting++;
      }
      q.lastWaited = System.nanoTime();
      try {
        while (true) {
          if (wakeAllGeneration != wakeAllSeen) {
            return Wake.SIGNAL;
          }
          if (generation != seen) {
            if (q.claimed != generation) {
              q.claimed = generation; // this waiter looks; the others of the queue wait on
              return Wake.SIGNAL;
            }
            seen = generation;
          }
          if (q.poller == null || (unfiltered && q.pollerFiltered)) {
            q.poller = me;
            q.pollerFiltered = !unfiltered;
          }
          long now = System.nanoTime();
          long until = end;
          if (q.poller == me) {
            if (q.nextLook - now <= 0) {
              q.nextLook = now + pollNanos; // until the looker says what it found
              if (q.pollerFiltered) {
                // a filtered look may leave due items: an unfiltered receive that starts looks
                q.emptyGeneration = -1;
              }
              return Wake.LOOK;
            }
            until = q.nextLook - end < 0 ? q.nextLook : end;
          }
          long left = until - now;
          if (left <= 0) {
            return Wake.TIMEOUT;
          }
          try {
            wait(left / 1_000_000L, (int) (left % 1_000_000L));
          } catch (InterruptedException e) {
            me.interrupt();
            return Wake.INTERRUPTED;
          }
        }
      } finally {
        q.waiting--;
        if (unfiltered) {
          q.unfilteredWaiting--;
        }
        q.lastWaited = System.nanoTime();
        if (q.poller == me) {
          q.poller = null;
          if (q.waiting > 0) {
            notifyAll(); // hand the poller role on
          }
        }
      }
    }
  }
}
