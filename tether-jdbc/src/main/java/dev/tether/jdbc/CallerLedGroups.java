package dev.tether.jdbc;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.ToLongFunction;

/**
 * Groups of work run by one of the callers waiting for them (a leader), the mechanism of the
 * store's group commits ({@link GroupCommitter}'s completions and acquisitions, {@link
 * EnqueueGroups}' single enqueues) and of its batched lease renewals ({@link RenewalBatcher}). A
 * caller queues its members and waits; when no group is in flight it leads one at once, so a lone
 * caller pays no wait; callers arriving while a group is in flight queue up, and the next leader
 * runs everything queued (up to a bound) as one group. A further group
 * starts beside those in flight only while fewer than {@code parallelGroups} are, and only when
 * at least {@code minParallelGroup} members are queued for it: a parallel group of one or two
 * slows the one in flight more than it gains (docs/PERFORMANCE.md).
 *
 * <p>Wake-ups are targeted: each waiting caller parks its own thread; a leader unparks exactly the
 * callers of the members it ran, and when it steps down, the caller of the oldest queued member
 * that has one, which then leads the next group. A member may have no waiter (a deferred
 * completion nobody waits for yet): it rides in the next group anyone leads.
 *
 * <p>No thread of its own. Thread-safe.
 *
 * @param <M> the members
 */
final class CallerLedGroups<M extends CallerLedGroups.Member> {
  /** What a group holds: set by its runner, read by its waiter once {@link #isDone()}. */
  abstract static class Member {
    /**
     * The thread to unpark when done: the caller, or null until a caller adopts the member
     * ({@link #adopt}). Written before the adopter reads {@code done}; read after the leader
     * wrote {@code done}, so one of the two sees the other.
     */
    private volatile Thread waiter;
    private volatile boolean done;

    /** A member the calling thread waits for. */
    Member() {
      this.waiter = Thread.currentThread();
    }

    /** A member nobody waits for yet ({@code waited} false), or the calling thread. */
    Member(boolean waited) {
      this.waiter = waited ? Thread.currentThread() : null;
    }

    /** Whether its group has run; its outcome, written by the group's runner, is then final. */
    final boolean isDone() {
      return done;
    }

    /** The calling thread waits for this member from now on. */
    final void adopt() {
      waiter = Thread.currentThread();
    }
  }

  /**
   * What a leader does before it takes the members of its next group, on its own thread, while
   * further members may queue: yield the processor (the default), or wait for a pacing gap.
   */
  @FunctionalInterface
  interface BeforeGroup {
    /** Returns when the group may be taken; on an interrupt, returns with the status set. */
    void await();
  }

  /**
   * The default {@link BeforeGroup}: lets callers that are runnable but not yet running (woken by
   * the previous group) queue their next member first. On a busy machine the woken callers
   * otherwise only get a core after this group took what was queued, and groups stay at one or
   * two members (docs/PERFORMANCE.md, "Where the time goes"). Returns at once when nothing else
   * is runnable.
   */
  static final BeforeGroup YIELD = Thread::yield;

  /** Runs one group. */
  @FunctionalInterface
  interface Runner<M> {
    /**
     * Runs {@code members} as one group and records each one's outcome on it (it may reorder the
     * list, which is its own). Whatever it throws reaches the leader after the members were
     * marked done, so it records a failure on the members first; only an {@code Error} should
     * escape.
     */
    void run(List<M> members);
  }

  private final ConcurrentLinkedQueue<M> pending = new ConcurrentLinkedQueue<>();
  /** About how many are in {@link #pending}: counted up before a member is queued, down when taken. */
  private final AtomicInteger queued = new AtomicInteger();
  /** Leaders running a group now, at most {@link #parallelGroups}. */
  private final AtomicInteger leading = new AtomicInteger();
  private final int parallelGroups;
  private final int minParallelGroup;
  private final int maxMembers;
  private final ToLongFunction<M> weight;
  private final long maxWeight;
  private final Runner<M> runner;
  private final BeforeGroup beforeGroup;

  /**
   * @param parallelGroups the most groups in flight at once (at least 1)
   * @param minParallelGroup the fewest queued members for which a group starts beside one in flight
   * @param maxMembers the most members of one group
   * @param weight each member's weight (bytes, say)
   * @param maxWeight the weight from which on a group takes no further member (it always takes one)
   * @param runner runs a group
   */
  CallerLedGroups(int parallelGroups, int minParallelGroup, int maxMembers, ToLongFunction<M> weight,
      long maxWeight, Runner<M> runner) {
    this(parallelGroups, minParallelGroup, maxMembers, weight, maxWeight, runner, YIELD);
  }

  /**
   * As {@link #CallerLedGroups(int, int, int, ToLongFunction, long, Runner)}, with what a leader
   * does before taking each group.
   */
  CallerLedGroups(int parallelGroups, int minParallelGroup, int maxMembers, ToLongFunction<M> weight,
      long maxWeight, Runner<M> runner, BeforeGroup beforeGroup) {
    if (parallelGroups < 1 || minParallelGroup < 1 || maxMembers < 1) {
      throw new IllegalArgumentException("parallelGroups, minParallelGroup and maxMembers must be at"
          + " least 1, got " + parallelGroups + ", " + minParallelGroup + " and " + maxMembers);
    }
    this.parallelGroups = parallelGroups;
    this.minParallelGroup = minParallelGroup;
    this.maxMembers = maxMembers;
    this.weight = weight;
    this.maxWeight = maxWeight;
    this.runner = runner;
    this.beforeGroup = beforeGroup;
  }

  /** Queues a member without waiting for it: it runs in the next group anyone leads. */
  void queue(M member) {
    queued.incrementAndGet();
    pending.add(member);
  }

  /**
   * Queues {@code mine} (members of the calling thread) and returns once all of them ran, leading
   * groups when no other leader runs them.
   */
  void run(List<M> mine) {
    queued.addAndGet(mine.size());
    pending.addAll(mine);
    awaitDone(mine);
  }

  /**
   * Returns once every one of {@code mine} (queued; the calling thread their waiter, see {@link
   * Member#adopt}) ran, leading groups when no other leader runs them. Interrupts do not stop the
   * wait (a member may be in a group being run); the thread's interrupt status is restored.
   *
   * <p>What a runner throws in a group this caller leads reaches this caller. Its members that
   * were not in that group stay queued and from then on wait for nobody: they run in a later
   * group anyone leads, their outcome unobserved.
   */
  void awaitDone(List<M> mine) {
    boolean interrupted = false;
    while (!allDone(mine)) {
      if (becomeLeader()) {
        boolean threw = true;
        try {
          // Lead until ours ran; when nothing is queued, ours are in a group another leader is
          // running, which unparks us when it is done.
          while (!allDone(mine)) {
            beforeGroup.await();
            if (Thread.interrupted()) {
              interrupted = true; // restored on return; meanwhile the next pause still waits
            }
            if (!runGroup()) {
              break;
            }
          }
          threw = false;
        } finally {
          leading.decrementAndGet();
          if (threw) {
            // This caller leaves with the runner's throw: none of its queued members may take
            // the hand-off, or the callers queued behind them would wait for a leader who left.
            for (Member m : mine) {
              if (!m.done) {
                m.waiter = null;
              }
            }
          }
          // also when a runner threw: the next queued caller leads
          handOff();
        }
        if (allDone(mine)) {
          break;
        }
      }
      // Not leading: a leader unparks us when ours are done or when it steps down (handOff), and
      // park returns at once if that came before it (no lost wake-up).
      LockSupport.park(this);
      if (Thread.interrupted()) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /** About how many members are queued (tests). */
  int queued() {
    return queued.get();
  }

  private static boolean allDone(List<? extends Member> ms) {
    for (Member m : ms) {
      if (!m.done) {
        return false;
      }
    }
    return true;
  }

  /**
   * Whether this caller leads a group now: when no one leads, or beside the groups in flight
   * when fewer than {@link #parallelGroups} are and at least {@link #minParallelGroup} members
   * are queued.
   */
  private boolean becomeLeader() {
    while (true) {
      int n = leading.get();
      if (n > 0 && (n >= parallelGroups || queued.get() < minParallelGroup)) {
        return false;
      }
      if (leading.compareAndSet(n, n + 1)) {
        return true;
      }
    }
  }

  /**
   * After a leader stepped down: wakes the caller of the oldest queued member that has one, to
   * lead its group (a member nobody waits for waits for the next group). A member queued or
   * adopted after this look finds the leader gone (it stepped down before), so its own caller
   * leads.
   */
  private void handOff() {
    for (Member m : pending) {
      Thread w = m.waiter;
      if (w != null) {
        LockSupport.unpark(w);
        return;
      }
    }
  }

  /** Runs up to {@link #maxMembers} queued members; returns false if none was queued. Leader only. */
  private boolean runGroup() {
    List<M> members = new ArrayList<>();
    long taken = 0;
    M m;
    while (members.size() < maxMembers && taken < maxWeight && (m = pending.poll()) != null) {
      queued.decrementAndGet();
      members.add(m);
      taken += weight.applyAsLong(m);
    }
    if (members.isEmpty()) {
      return false;
    }
    try {
      runner.run(members);
    } finally {
      // Also when the runner throws: no caller is left waiting for a group that will not finish.
      for (Member x : members) {
        x.done = true;
      }
      // The group's other callers return now, while the next group forms.
      Thread me = Thread.currentThread();
      for (Member x : members) {
        Thread w = x.waiter;
        if (w != null && w != me) {
          LockSupport.unpark(w);
        }
      }
    }
    return true;
  }
}
