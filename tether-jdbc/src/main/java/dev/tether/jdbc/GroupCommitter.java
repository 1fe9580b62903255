package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.locks.LockSupport;

/**
 * Group commit of completions (acknowledgements): up to {@code parallelGroups} callers commit at
 * once (leaders); callers that arrive while all leaders are busy queue up, and the next leader
 * commits all queued completions in one transaction, one batched conditional UPDATE on (id, lease
 * token, status) each. Grouping is adaptive: a completion that arrives while no group is in
 * flight commits at once, alone; only completions arriving during a commit wait for the next one.
 * A caller returns only after the transaction holding its completion committed, so every
 * completion is durable when the call returns; a completion whose conditional update matched
 * nothing is refused on its own (the others of its group commit), and if the group's transaction
 * fails, every completion of the group fails with that error and none is applied.
 *
 * <p>Acquisitions join groups too (SQLite always; PostgreSQL for unfiltered acquisitions on the
 * database clock): on PostgreSQL a group of completions without output and acquisitions from one
 * queue is one auto-committed statement, so a worker's {@code receive} shares the WAL flush of
 * concurrent acknowledgements instead of paying one of its own.
 *
 * <p>Wake-ups are targeted: each waiting caller parks its own thread; a leader unparks exactly the
 * callers whose completions it committed, and when it steps down, the caller of the oldest queued
 * completion, which then leads the next group.
 *
 * <p>No thread of its own: the leader is one of the callers. Thread-safe.
 */
final class GroupCommitter {
  /** Largest number of completions in one transaction. */
  static final int MAX_GROUP = 256;

  private final TetherStore store;
  private final WorkItemRepository repo;
  private final ConcurrentLinkedQueue<Completion> pending = new ConcurrentLinkedQueue<>();
  private final Semaphore leaders;
  /** Groups committed as one statement with acquisitions (PostgreSQL), for tests. */
  private final java.util.concurrent.atomic.LongAdder fusedStatements = new java.util.concurrent.atomic.LongAdder();

  GroupCommitter(TetherStore store, WorkItemRepository repo, int parallelGroups) {
    this.store = store;
    this.repo = repo;
    this.leaders = new Semaphore(parallelGroups);
  }

  /**
   * One completion waiting for its group; {@code error} is written before {@code done}, and the
   * waiter is unparked after {@code done}.
   */
  static final class Completion {
    final long id;
    final long token;
    final byte[] output;
    final Clock clock;
    final Thread waiter;
    /** Non-null for an acquisition (then id, token and output are unused). */
    final AcquireRequest acquire;
    final String holder;
    volatile List<Lease> leases;
    volatile boolean done;
    volatile RuntimeException error;

    Completion(long id, long token, byte[] output, Clock clock) {
      this(id, token, output, clock, null, null);
    }

    private Completion(
        long id, long token, byte[] output, Clock clock, AcquireRequest acquire, String holder) {
      this.id = id;
      this.token = token;
      this.output = output;
      this.clock = clock;
      this.acquire = acquire;
      this.holder = holder;
      this.waiter = Thread.currentThread();
    }

    static Completion acquisition(AcquireRequest request, String holder, Clock clock) {
      return new Completion(Long.MAX_VALUE, 0, null, clock, request, holder);
    }
  }

  /**
   * Completes the item leased with {@code token}, durably, sharing a transaction with concurrent
   * completions. Blocks until committed.
   *
   * @throws LeaseConflictException if another lease holds the item
   * @throws LeaseExpiredException if the lease is no longer held
   * @throws ItemFinalizedException if this lease already finalized the item
   * @throws StoreUnavailableException if the database cannot be reached (nothing applied)
   */
  void complete(long id, long token, byte[] output, Clock clock) {
    Completion mine = new Completion(id, token, output, clock);
    await(List.of(mine));
    if (mine.error != null) {
      throw mine.error;
    }
  }

  /**
   * Completes several leases, durably, in as few transactions as possible (one when there are
   * at most {@link #MAX_GROUP}); each is applied or refused on its own. Blocks until all are
   * committed. Returns, in order, null for each completed and the exception of each refused or
   * of the failed transaction that held it (then not applied).
   */
  List<RuntimeException> completeAll(List<long[]> idsAndTokens, Clock clock) {
    List<Completion> mine = new ArrayList<>(idsAndTokens.size());
    for (long[] x : idsAndTokens) {
      mine.add(new Completion(x[0], x[1], null, clock));
    }
    await(mine);
    List<RuntimeException> out = new ArrayList<>(mine.size());
    for (Completion c : mine) {
      out.add(c.error);
    }
    return out;
  }

  /**
   * Acquires for {@code holder} in the next group's transaction, after its completions (SQLite,
   * where writes are serialized anyway, and PostgreSQL: a worker's acquisition shares the commit
   * of concurrent acknowledgements instead of taking one of its own; on PostgreSQL a group whose
   * members have no output, no injected clock and whose acquisitions are from one queue without
   * filters is one statement). Blocks until committed; the leases are
   * durable (as far as the engine's synchronous setting makes any commit durable) when this
   * returns. A completion of the same group refused for a stale token does not affect the
   * acquisition; a failed transaction fails every member, this acquisition included (nothing
   * taken).
   *
   * @throws StoreUnavailableException if the database cannot be reached (nothing taken)
   */
  List<Lease> acquire(AcquireRequest request, String holder, Clock clock) {
    Completion mine = Completion.acquisition(request, holder, clock);
    await(List.of(mine));
    if (mine.error != null) {
      throw mine.error;
    }
    return mine.leases;
  }

  /**
   * Runs {@code members} (completions and acquisitions, all of this thread) in as few groups as
   * possible; one group when there are at most {@link #MAX_GROUP} and no other leader took some
   * of them. For tests of fused groups. Returns when all are done; each carries its outcome.
   */
  void submitAll(List<Completion> members) {
    await(members);
  }

  /** How many groups ran as one statement with acquisitions (PostgreSQL); for tests. */
  long fusedStatements() {
    return fusedStatements.sum();
  }

  private static boolean allDone(List<Completion> cs) {
    for (Completion c : cs) {
      if (!c.done) {
        return false;
      }
    }
    return true;
  }

  private void await(List<Completion> mine) {
    pending.addAll(mine);
    boolean interrupted = false;
    while (!allDone(mine)) {
      if (leaders.tryAcquire()) {
        try {
          // Lead until ours are committed; false from commitGroup means nothing was queued: ours
          // are in a group another leader is committing, which unparks us when it is done.
          while (!allDone(mine) && commitGroup()) {
            // next group
          }
        } finally {
          leaders.release();
        }
        handOff();
        if (allDone(mine)) {
          break;
        }
      }
      // Not leading: a leader unparks us when ours are done or when it steps down (handOff), and
      // park returns at once if that came before it (no lost wake-up).
      LockSupport.park(this);
      if (Thread.interrupted()) {
        // The completion may already be in a committing group: see it through, then restore.
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * After a leader released its permit: wakes the caller of the oldest queued completion, if
   * any, to lead its group. A completion queued after this look found the permit free (it was
   * released before), so its own caller leads.
   */
  private void handOff() {
    Completion head = pending.peek();
    if (head != null) {
      LockSupport.unpark(head.waiter);
    }
  }

  /**
   * Commits up to {@link #MAX_GROUP} queued completions; returns false if none was queued.
   * Caller holds a leader permit.
   */
  private boolean commitGroup() {
    // Let callers that are runnable but not yet running (woken by the previous group) queue their
    // next completion first: on two busy cores the woken callers otherwise only get a core after
    // this group took what was queued, and groups stay at one or two members (measured on SQLite:
    // 1.3 members per group without this, 7.9 with it, for 8 workers acknowledging one message at
    // a time). Returns at once when nothing else is runnable.
    Thread.yield();
    List<Completion> group = new ArrayList<>();
    Completion c;
    while (group.size() < MAX_GROUP && (c = pending.poll()) != null) {
      group.add(c);
    }
    if (group.isEmpty()) {
      return false;
    }
    // Same row order in every group: concurrent transactions never lock two rows crosswise.
    group.sort(Comparator.comparingLong((Completion x) -> x.id));
    List<Completion> completions = new ArrayList<>(group.size());
    List<Completion> acquisitions = new ArrayList<>();
    for (Completion x : group) {
      (x.acquire == null ? completions : acquisitions).add(x);
    }
    // On PostgreSQL a group without outputs, at one instant, is one UPDATE: auto-commit saves the
    // COMMIT round trip. Anything else runs in a transaction of its own.
    boolean postgres = store.engine() == TetherStore.Engine.POSTGRESQL;
    boolean oneStatement = postgres && acquisitions.isEmpty();
    for (Completion x : group) {
      oneStatement &= x.output == null && x.clock == group.get(0).clock;
    }
    // On PostgreSQL, acquisitions from one queue (no filters) with completions without output, all
    // at the database clock, are one statement too: one round trip and one WAL flush for the
    // whole group instead of a commit per acquisition beside the group's.
    boolean fused = postgres && !acquisitions.isEmpty();
    for (Completion x : group) {
      fused &= x.output == null && x.clock == null;
      if (x.acquire != null) {
        fused &= x.acquire.workType() == null && x.acquire.taskId() == null
            && x.acquire.queue().equals(acquisitions.get(0).acquire.queue());
      }
    }
    String what = group.size() == 1
        ? (acquisitions.isEmpty() ? "completing item " + group.get(0).id
            : "acquiring from queue '" + group.get(0).acquire.queue() + "'")
        : "completing " + completions.size() + " items and acquiring " + acquisitions.size() + " times";
    try {
      List<TetherStoreException> refusals = fused
          ? commitFused(what, completions, acquisitions)
          : oneStatement
          ? store.writeOneStatement(what, conn -> completeAll(conn, completions))
          : store.write(what, conn -> {
            // Completions first: what a worker acknowledged is finished before it asks for more.
            List<TetherStoreException> r = completions.isEmpty() ? List.of() : completeAll(conn, completions);
            for (Completion a : acquisitions) {
              a.leases = repo.acquire(conn, a.acquire, a.holder, store.now(conn, a.clock), null);
            }
            return r;
          });
      for (int i = 0; i < completions.size(); i++) {
        completions.get(i).error = refusals.get(i);
      }
      for (Completion x : group) {
        x.done = true;
      }
    } catch (RuntimeException e) {
      for (Completion x : group) {
        x.error = e;
        x.done = true;
      }
    }
    // Committed (or failed) callers return now, while the next group forms.
    Thread me = Thread.currentThread();
    for (Completion x : group) {
      if (x.waiter != me) {
        LockSupport.unpark(x.waiter);
      }
    }
    return true;
  }

  /**
   * A PostgreSQL group of completions (no output, database clock) and acquisitions from one queue
   * as one auto-committed statement. Sets each acquisition's leases; returns the completions'
   * refusals. When the queue holds expired leases or due scheduled items the statement takes
   * nothing (its completions still commit); each acquisition then runs the full acquisition
   * (which redelivers or fails the expired items and promotes the due ones) in a transaction of
   * its own, and only its own failure is set on it.
   */
  private List<TetherStoreException> commitFused(
      String what, List<Completion> completions, List<Completion> acquisitions) {
    List<WorkItemRepository.Finish> finishes = new ArrayList<>(completions.size());
    for (Completion x : completions) {
      finishes.add(new WorkItemRepository.Finish(x.id, x.token, null, null));
    }
    List<WorkItemRepository.Take> takes = new ArrayList<>(acquisitions.size());
    for (Completion a : acquisitions) {
      takes.add(new WorkItemRepository.Take(a.holder, a.acquire.leaseDuration(), a.acquire.maxItems()));
    }
    String queue = acquisitions.get(0).acquire.queue();
    WorkItemRepository.Fused out = store.writeOneStatement(what,
        conn -> repo.completeAndAcquirePostgres(conn, finishes, queue, takes));
    fusedStatements.increment();
    for (int i = 0; i < acquisitions.size(); i++) {
      Completion a = acquisitions.get(i);
      if (!out.expired()) {
        a.leases = out.leases().get(i);
        continue;
      }
      try {
        a.leases = store.write("acquiring from queue '" + queue + "'",
            conn -> repo.acquire(conn, a.acquire, a.holder, store.now(conn, null), null));
      } catch (RuntimeException e) {
        a.error = e;
      }
    }
    return out.refusals();
  }

  private List<TetherStoreException> completeAll(Connection conn, List<Completion> group)
      throws SQLException {
    Instant dbNow = null;
    // Only a PostgreSQL group that is one UPDATE (no outputs, no injected clock) may leave the
    // instant to the statement; any other group needs an instant for every completion.
    boolean sqlClock = store.engine() == TetherStore.Engine.POSTGRESQL;
    for (Completion x : group) {
      sqlClock &= x.output == null && x.clock == null;
    }
    List<WorkItemRepository.Finish> finishes = new ArrayList<>(group.size());
    java.util.Map<Clock, Instant> clockNow = new java.util.IdentityHashMap<>();
    for (Completion x : group) {
      Instant now;
      if (x.clock != null) {
        // one reading per clock: a group completes at one instant per clock
        Instant read = clockNow.get(x.clock);
        if (read == null) {
          read = store.now(conn, x.clock);
          clockNow.put(x.clock, read);
        }
        now = read;
      } else if (sqlClock) {
        now = null; // the statement reads the database clock itself: no extra round trip
      } else {
        if (dbNow == null) {
          dbNow = store.now(conn, null);
        }
        now = dbNow;
      }
      finishes.add(new WorkItemRepository.Finish(x.id, x.token, x.output, now));
    }
    return repo.completeAll(conn, finishes);
  }
}
