package dev.tether.jdbc;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The acknowledgements of one {@link JdbcMailbox} in deferred mode ({@link
 * JdbcMailbox.Builder#deferredAcknowledgements}): each is queued in the store's {@link
 * GroupCommitter} and the acknowledging thread returns at once; the completion commits, fenced by
 * its lease token as always, in the store's next group (typically the same worker's next receive,
 * whose acquisition shares the statement), or at the latest:
 *
 * <ul>
 *   <li>when {@code maxBatch} of this mailbox's completions are queued: the acknowledgement that
 *       reached the bound commits all of them before it returns;
 *   <li>when the oldest has waited {@code maxDelay}: the flusher thread commits them.
 * </ul>
 *
 * <p>The delay is measured by the mailbox's clock when one is set (its own or the store's: tests
 * move it by hand, and a frozen clock never times a flush out), else by {@link System#nanoTime()};
 * the flusher looks again at least every {@code maxDelay}.
 *
 * <p>The flusher is one daemon thread per mailbox in this mode, named {@code
 * tether-ack-flusher-<queue>-<n>}, started with the mailbox and stopped by {@link #close()}. It is
 * a daemon because what it holds is lost with the process anyway (the mode's documented price):
 * keeping a JVM alive for a mailbox nobody closed would trade that for a process that never
 * exits. It waits (parked) while nothing is queued.
 *
 * <p>A queued completion refused when it commits (the lease was lost or the message cancelled or
 * finalized: a stale token) is not applied; as nobody waits for it, it is logged at WARN with the
 * item's id and counted ({@link #refused()}). One whose group failed (the database unreachable)
 * is not applied either, logged and counted ({@link #failed()}): its message is redelivered when
 * its lease expires (at-least-once, as for any acknowledgement lost with its worker).
 *
 * <p>Thread-safe.
 */
final class DeferredAcknowledgements {
  private static final Logger LOG = LoggerFactory.getLogger(DeferredAcknowledgements.class);
  private static final AtomicInteger SEQUENCE = new AtomicInteger();

  /** A queued completion and when it was queued. */
  private static final class Entry {
    final GroupCommitter.Completion completion;
    final long queuedAt;

    Entry(GroupCommitter.Completion completion, long queuedAt) {
      this.completion = completion;
      this.queuedAt = queuedAt;
    }
  }

  private final String queue;
  private final int maxBatch;
  private final long maxDelayNanos;
  private final GroupCommitter committer;
  /** Null: {@link System#nanoTime()}. */
  private final Clock clock;
  private final ConcurrentLinkedQueue<Entry> queued = new ConcurrentLinkedQueue<>();
  /** Queued and not yet run: incremented before a completion is queued, decremented when it ran. */
  private final AtomicInteger unflushed = new AtomicInteger();
  private final LongAdder committed = new LongAdder();
  private final LongAdder refused = new LongAdder();
  private final LongAdder failed = new LongAdder();
  /** One flush at a time: a completion is adopted by one flushing thread only. */
  private final ReentrantLock flushLock = new ReentrantLock();
  private final Thread flusher;
  private volatile boolean closed;
  /** The flusher is parked without a deadline: whoever queues must wake it. */
  private volatile boolean idle;

  DeferredAcknowledgements(
      String queue, int maxBatch, Duration maxDelay, GroupCommitter committer, Clock clock) {
    this.queue = queue;
    this.clock = clock;
    this.maxBatch = maxBatch;
    this.maxDelayNanos = maxDelay.toNanos();
    this.committer = committer;
    this.flusher = new Thread(this::runFlusher,
        "tether-ack-flusher-" + queue + "-" + SEQUENCE.incrementAndGet());
    this.flusher.setDaemon(true);
    this.flusher.start();
  }

  /**
   * Queues the completion of a held item and returns without waiting for it, unless it is the
   * {@code maxBatch}-th queued (then all are committed first) or the mailbox is closed (then it
   * is committed before this returns).
   *
   * @param leases the mailbox's lease manager (its clock and holder)
   */
  void add(LeaseManager leases, long id, long token, byte[] output) {
    int count = unflushed.incrementAndGet(); // before it can run: the count never goes negative
    GroupCommitter.Completion c;
    try {
      c = leases.completeDeferred(id, token, output, this::ran);
    } catch (RuntimeException e) {
      unflushed.decrementAndGet(); // refused before it was queued (an output over the limit)
      throw e;
    }
    queued.add(new Entry(c, now()));
    if (count >= maxBatch || closed) {
      flush(); // the count bound, or close() may have flushed before this was queued
    } else if (idle) {
      LockSupport.unpark(flusher);
    }
  }

  /** The leader's callback: counts the outcome, and logs one that was not applied. */
  private void ran(GroupCommitter.Completion c) {
    unflushed.decrementAndGet();
    RuntimeException e = c.error();
    if (e == null) {
      committed.increment();
    } else if (e instanceof LeaseLostException || e instanceof ItemFinalizedException) {
      refused.increment();
      LOG.warn("Deferred acknowledgement of message {} in mailbox '{}' was refused and not applied"
          + " (its lease token is stale: {}); the message belongs to its new delivery", c.id, queue,
          e.getMessage());
    } else {
      failed.increment();
      LOG.warn("Deferred acknowledgement of message {} in mailbox '{}' failed and was not applied"
          + " ({}); the message is redelivered when its lease expires", c.id, queue, e.toString());
    }
  }

  /**
   * Commits every completion queued so far and returns once they ran (applied, refused or
   * failed: see the counters).
   */
  void flush() {
    flushLock.lock();
    try {
      List<GroupCommitter.Completion> mine = new ArrayList<>();
      Entry e;
      while ((e = queued.poll()) != null) {
        if (!e.completion.isDone()) {
          mine.add(e.completion);
        }
      }
      if (!mine.isEmpty()) {
        committer.flush(mine);
      }
    } finally {
      flushLock.unlock();
    }
  }

  private void runFlusher() {
    while (!closed) {
      // Only close() stops this thread. An interrupt from anyone else is dropped: kept, it would
      // make every park below return at once and the thread spin.
      Thread.interrupted();
      Entry head;
      while ((head = queued.peek()) != null && head.completion.isDone()) {
        queued.remove(head); // ran in someone's group already
      }
      if (head == null) {
        idle = true;
        if (queued.isEmpty() && !closed) {
          LockSupport.park(this); // woken by add (it reads idle after queuing) or close
        }
        idle = false;
        continue;
      }
      long wait = head.queuedAt + maxDelayNanos - now();
      if (wait > 0) {
        LockSupport.parkNanos(this, Math.min(wait, maxDelayNanos));
        continue;
      }
      try {
        flush();
      } catch (RuntimeException ex) {
        // flush itself does not throw for a failed group (each completion carries its outcome)
        LOG.warn("Flushing the deferred acknowledgements of mailbox '{}' failed", queue, ex);
      }
    }
  }

  /**
   * Stops queueing in the background: commits everything queued and waits for it, then stops
   * the flusher thread. Acknowledgements after this commit before they return.
   */
  void close() {
    closed = true;
    flush();
    LockSupport.unpark(flusher);
    boolean interrupted = false;
    while (flusher.isAlive() && Thread.currentThread() != flusher) {
      try {
        flusher.join();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private long now() {
    if (clock == null) {
      return System.nanoTime();
    }
    java.time.Instant t = clock.instant();
    return t.getEpochSecond() * 1_000_000_000L + t.getNano();
  }

  /** Completions queued and not yet run. */
  int unflushed() {
    return unflushed.get();
  }

  long committed() {
    return committed.sum();
  }

  long refused() {
    return refused.sum();
  }

  long failed() {
    return failed.sum();
  }

  int maxBatch() {
    return maxBatch;
  }

  Duration maxDelay() {
    return Duration.ofNanos(maxDelayNanos);
  }
}
