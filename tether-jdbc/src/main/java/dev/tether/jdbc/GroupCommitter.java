package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

/**
 * Group commit of completions (acknowledgements), on {@link CallerLedGroups}: up to {@code
 * parallelGroups} callers commit at once (leaders); callers that arrive while a group commits
 * queue up, and the next leader commits all queued completions together, each a conditional
 * update on (id, lease token, status). Grouping is adaptive: a completion that arrives while no
 * group is in flight commits at once, alone; only completions arriving during a commit wait for
 * the next one, and a further group starts beside one in flight only when at least {@value
 * #MIN_PARALLEL_GROUP} members are queued for it. A caller returns
 * only after the group holding its completion committed, so every completion is durable when the
 * call returns; a completion whose conditional update matched nothing is refused on its own (the
 * others of its group commit), and if the group fails, every completion of the group fails with
 * that error and none is applied.
 *
 * <p>Acquisitions join groups too, after the group's completions, so that a worker's {@code
 * receive} shares the commit of concurrent acknowledgements instead of paying one of its own. How
 * a group runs is the engine's ({@link StoreEngine#commitGroup}): one write transaction, or on
 * PostgreSQL one auto-committed statement for a group whose members have no output and one clock
 * and whose acquisitions are from one queue without filters.
 *
 * <p>Deferred completions ({@link #defer}, for {@link JdbcMailbox.Builder#deferredAcknowledgements})
 * are queued like the others but nobody waits for them: they ride in the next group any caller
 * leads (a receive's acquisition, another acknowledgement), or in a group led by {@link #flush},
 * and their outcome goes to a callback run by the leader. A queued deferred completion has no
 * waiter until a flush adopts it, so a stepping-down leader hands off to the oldest queued
 * completion that has one.
 *
 * <p>No thread of its own: the leader is one of the callers. Thread-safe.
 */
final class GroupCommitter {
  /** Largest number of completions in one transaction. */
  static final int MAX_GROUP = 256;
  /**
   * Fewest queued members for which a caller leads a group while another leader commits (with
   * more than one group allowed in flight).
   */
  static final int MIN_PARALLEL_GROUP = 4;

  private final TetherStore store;
  /** The SQL pieces of the groups, on the engine's statements for them ({@link StoreEngine#groupStatements}). */
  private final StoreSql sql;
  private final CallerLedGroups<Completion> groups;
  /** Groups committed as one statement with acquisitions (PostgreSQL), for tests. */
  private final LongAdder fusedStatements = new LongAdder();

  GroupCommitter(TetherStore store, StoreSql sql, int parallelGroups) {
    this.store = store;
    this.sql = sql;
    this.groups = new CallerLedGroups<>(parallelGroups, MIN_PARALLEL_GROUP, MAX_GROUP, c -> 0, 1,
        this::commitGroup);
  }

  /**
   * One completion waiting for its group; {@code error} is written before {@code done}, and the
   * waiter is unparked after {@code done}.
   */
  static final class Completion extends CallerLedGroups.Member {
    final long id;
    final long token;
    final byte[] output;
    final Clock clock;
    /** For a deferred completion: told of the outcome by the leader, before {@code done}. */
    final Consumer<Completion> onDone;
    /** Non-null for an acquisition (then id, token and output are unused). */
    final AcquireRequest acquire;
    final String holder;
    volatile List<Lease> leases;
    volatile RuntimeException error;

    Completion(long id, long token, byte[] output, Clock clock) {
      this(id, token, output, clock, null, null, null);
    }

    private Completion(long id, long token, byte[] output, Clock clock, AcquireRequest acquire,
        String holder, Consumer<Completion> onDone) {
      super(onDone == null); // a deferred completion has no waiter until a flush adopts it
      this.id = id;
      this.token = token;
      this.output = output;
      this.clock = clock;
      this.acquire = acquire;
      this.holder = holder;
      this.onDone = onDone;
    }

    /** Its refusal or its group's failure once done; null when applied. */
    RuntimeException error() {
      return error;
    }

    static Completion acquisition(AcquireRequest request, String holder, Clock clock) {
      return new Completion(Long.MAX_VALUE, 0, null, clock, request, holder, null);
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
    groups.run(List.of(mine));
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
  List<RuntimeException> completeAll(List<LeaseKey> leases, Clock clock) {
    List<Completion> mine = new ArrayList<>(leases.size());
    for (LeaseKey k : leases) {
      mine.add(new Completion(k.id(), k.token(), null, clock));
    }
    groups.run(mine);
    List<RuntimeException> out = new ArrayList<>(mine.size());
    for (Completion c : mine) {
      out.add(c.error);
    }
    return out;
  }

  /**
   * Acquires for {@code holder} in the next group, after its completions: a worker's acquisition
   * shares the commit of concurrent acknowledgements instead of taking one of its own. Blocks
   * until committed; the leases are durable (as far as the engine's synchronous setting makes any
   * commit durable) when this returns. A completion of the same group refused for a stale token does not affect the
   * acquisition; a failed transaction fails every member, this acquisition included (nothing
   * taken).
   *
   * @throws StoreUnavailableException if the database cannot be reached (nothing taken)
   */
  List<Lease> acquire(AcquireRequest request, String holder, Clock clock) {
    Completion mine = Completion.acquisition(request, holder, clock);
    groups.run(List.of(mine));
    if (mine.error != null) {
      throw mine.error;
    }
    return mine.leases;
  }

  /**
   * Queues a completion without waiting for it: it commits in the next group any caller leads
   * (or one {@link #flush} leads), a conditional update on (id, lease token, status) like every
   * other. {@code onDone} is told the outcome ({@link Completion#error()} null when applied) by
   * the leader, on the leader's thread, before the completion counts as done; it must be quick and
   * must not throw (what it throws is dropped).
   */
  Completion defer(long id, long token, byte[] output, Clock clock, Consumer<Completion> onDone) {
    Completion c = new Completion(id, token, output, clock, null, null, java.util.Objects.requireNonNull(onDone));
    groups.queue(c);
    return c;
  }

  /**
   * Returns once every one of {@code queued} (deferred completions from {@link #defer}) has
   * run, leading groups when no other leader is committing them. A completion that already ran
   * is skipped. The same completion must not be flushed by two threads at once.
   */
  void flush(List<Completion> queued) {
    List<Completion> mine = new ArrayList<>(queued.size());
    for (Completion c : queued) {
      c.adopt(); // before isDone is read: a leader finishing it now unparks us
      if (!c.isDone()) {
        mine.add(c);
      }
    }
    if (!mine.isEmpty()) {
      groups.awaitDone(mine);
    }
  }

  /**
   * Runs {@code members} (completions and acquisitions, all of this thread) in as few groups as
   * possible; one group when there are at most {@link #MAX_GROUP} and no other leader took some
   * of them. For tests of fused groups. Returns when all are done; each carries its outcome.
   */
  void submitAll(List<Completion> members) {
    groups.run(members);
  }

  /** How many groups ran as one statement with acquisitions (PostgreSQL); for tests. */
  long fusedStatements() {
    return fusedStatements.sum();
  }

  /** Commits one group of queued completions and acquisitions (leader; {@link CallerLedGroups}). */
  private void commitGroup(List<Completion> members) {
    // Same row order in every group: concurrent transactions never lock two rows crosswise.
    members.sort(Comparator.comparingLong((Completion x) -> x.id));
    Group group = new Group(members);
    try {
      List<TetherStoreException> refusals = store.storeEngine().commitGroup(store, group);
      for (int i = 0; i < group.completions.size(); i++) {
        group.completions.get(i).error = refusals.get(i);
      }
    } catch (RuntimeException e) {
      for (Completion x : members) {
        x.error = e;
      }
    } catch (Error e) {
      // No member may pass for applied (a null error) or for taken; the leader gets the Error.
      for (Completion x : members) {
        x.error = new IllegalStateException("the group committing this " + (x.acquire == null
            ? "completion" : "acquisition") + " ended without an outcome; it may or may not have"
            + " been applied");
      }
      throw e;
    } finally {
      for (Completion x : members) {
        if (x.onDone != null) {
          try {
            x.onDone.accept(x);
          } catch (RuntimeException e) {
            // a callback's failure must not stop the others or the group's callers
          }
        }
      }
    }
  }

  /**
   * One group as the engine commits it: its completions (in id order) and its acquisitions. The
   * engine sets each acquisition's leases (or its own error) and returns the completions'
   * refusals.
   */
  final class Group {
    private final List<Completion> completions = new ArrayList<>();
    private final List<Completion> acquisitions = new ArrayList<>();
    private final String what;
    private final Clock clock;
    private final boolean oneClockNoOutput;

    private Group(List<Completion> members) {
      boolean same = true;
      for (Completion x : members) {
        (x.acquire == null ? completions : acquisitions).add(x);
        same &= x.output == null && x.clock == members.get(0).clock;
      }
      this.clock = members.get(0).clock;
      this.oneClockNoOutput = same;
      this.what = members.size() == 1
          ? (acquisitions.isEmpty() ? "completing item " + members.get(0).id
              : "acquiring from queue '" + members.get(0).acquire.queue() + "'")
          : "completing " + completions.size() + " items and acquiring " + acquisitions.size() + " times";
    }

    /** What the group does, for error messages. */
    String what() {
      return what;
    }

    /** The completions, in id order. */
    List<Completion> completions() {
      return completions;
    }

    /** The acquisitions, in the order they were queued. */
    List<Completion> acquisitions() {
      return acquisitions;
    }

    /** The clock of the first member: with {@link #oneClockNoOutput()}, every member's. */
    Clock clock() {
      return clock;
    }

    /** Whether no member carries output and all share one clock (the same object, or none). */
    boolean oneClockNoOutput() {
      return oneClockNoOutput;
    }

    /** Whether the acquisitions are all from one queue, without filters. */
    boolean oneQueueUnfiltered() {
      for (Completion a : acquisitions) {
        if (a.acquire.workType() != null || a.acquire.taskId() != null
            || !a.acquire.queue().equals(acquisitions.get(0).acquire.queue())) {
          return false;
        }
      }
      return true;
    }

    /** Counts a group committed as one statement with its acquisitions (tests). */
    void countFused() {
      fusedStatements.increment();
    }

    /**
     * Runs the group in one write transaction: completions first (what a worker acknowledged is
     * finished before it asks for more), then each acquisition in full.
     */
    List<TetherStoreException> commitInTransaction(TetherStore store) {
      return store.write(what, conn -> {
        List<TetherStoreException> r = completions.isEmpty() ? List.of() : complete(conn, store);
        for (Completion a : acquisitions) {
          a.leases = sql.acquisitions().acquire(conn, a.acquire, a.holder, store.now(conn, a.clock));
        }
        return r;
      });
    }

    /**
     * Completes the group's completions on {@code conn}: one instant per clock, read once; for
     * members without a clock, the engine's statement instant when none has output (the
     * statement may read the database clock itself), else the store's clock read once.
     */
    List<TetherStoreException> complete(Connection conn, TetherStore store) throws SQLException {
      boolean statementClock = true;
      for (Completion x : completions) {
        statementClock &= x.output == null && x.clock == null;
      }
      Map<Clock, Instant> clockNow = new IdentityHashMap<>();
      Instant unclocked = null;
      boolean unclockedRead = false;
      List<LeaseBatches.Finish> finishes = new ArrayList<>(completions.size());
      for (Completion x : completions) {
        Instant now;
        if (x.clock != null) {
          now = clockNow.get(x.clock);
          if (now == null) {
            now = store.now(conn, x.clock);
            clockNow.put(x.clock, now);
          }
        } else {
          if (!unclockedRead) {
            unclocked = statementClock ? store.storeEngine().statementInstant(conn) : store.now(conn, null);
            unclockedRead = true;
          }
          now = unclocked;
        }
        finishes.add(new LeaseBatches.Finish(x.id, x.token, x.output, now));
      }
      return sql.batches().completeAll(conn, finishes);
    }
  }
}
