package dev.tether.jdbc;

import java.sql.SQLException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Group commit of concurrent single enqueues of keyless items (PostgreSQL), on {@link
 * CallerLedGroups}: callers that arrive while a group is written queue up, and the next leader
 * inserts all queued items in one auto-committed statement, with one commit (one WAL flush) and at
 * most one notification for the group, instead of one of each per item. Grouping is adaptive: an
 * enqueue that arrives while no group is in flight is written at once, alone, in the single-item
 * statement, so a lone producer's latency is unchanged; only enqueues arriving while a group is
 * written wait for the next one. How many groups may be in flight is the engine's choice.
 *
 * <p>A caller returns only after the group holding its item committed, with the id of its own
 * item. When a group of several fails with an error that one of its items may have caused (a
 * refusal by the database rather than a store fault such as a lost connection or a full disk),
 * nothing of it was applied and each of its items is inserted again alone, so that only the
 * failing item's caller gets the error; a group failing with a store fault fails every caller of
 * the group with that error.
 *
 * <p>How a group is written is the engine's ({@link PostgresEngine#insertGroup}). Items with an
 * idempotency key and enqueues on a caller's connection never come here.
 *
 * <p>No thread of its own: the leader is one of the callers. Thread-safe.
 */
final class EnqueueGroups {
  private static final Logger LOG = LoggerFactory.getLogger(EnqueueGroups.class);

  /** Most items in one group. */
  static final int MAX_GROUP = 256;

  /** Input bytes from which on a group takes no further item. */
  static final long MAX_GROUP_BYTES = 4L << 20;

  /** Writes one group and returns its ids in order; throws if the group failed (nothing applied). */
  @FunctionalInterface
  interface Writer {
    long[] write(TetherStore store, String what, List<NewWorkItem> items, List<Clock> clocks);
  }

  private final Writer writer;
  private final CallerLedGroups<Pending> groups;
  /** Groups of more than one item written (tests, benchmarks). */
  private final LongAdder sharedGroups = new LongAdder();
  /** Items written in groups of more than one (tests, benchmarks). */
  private final LongAdder sharedItems = new LongAdder();
  /** Groups of several that failed and were written again one item at a time (tests). */
  private final LongAdder splitGroups = new LongAdder();

  /**
   * @param parallelGroups the most groups in flight at once
   * @param minParallelGroup the fewest queued enqueues for which a group starts beside one in flight
   */
  EnqueueGroups(Writer writer, int parallelGroups, int minParallelGroup) {
    this.writer = writer;
    this.groups = new CallerLedGroups<>(parallelGroups, minParallelGroup, MAX_GROUP,
        p -> p.item.inputUnsafe() == null ? 0 : p.item.inputUnsafe().length, MAX_GROUP_BYTES,
        this::writeGroup);
  }

  /**
   * One enqueue waiting for its group; {@code id} or {@code error} is written before it is done,
   * and the waiter is unparked after.
   */
  static final class Pending extends CallerLedGroups.Member {
    /** The store to write to: the engine's one store, the same for every member of a group. */
    final TetherStore store;
    final NewWorkItem item;
    final Clock clock;
    volatile long id;
    /** Set with {@code id} once the item's statement committed. */
    volatile boolean written;
    volatile RuntimeException error;

    Pending(TetherStore store, NewWorkItem item, Clock clock) {
      if (item.idempotencyKey() != null) {
        throw new IllegalArgumentException("items with an idempotency key are not grouped");
      }
      this.store = store;
      this.item = item;
      this.clock = clock;
    }

    /** The id, or the error of this enqueue once done. */
    long result() {
      if (error != null) {
        throw error;
      }
      return id;
    }
  }

  /**
   * Enqueues one keyless item durably, sharing a statement with concurrent enqueues. Blocks until
   * committed; returns the item's id.
   *
   * @throws StoreUnavailableException if the database cannot be reached (nothing written)
   * @throws TetherStoreException if the database refused the item
   */
  long enqueue(TetherStore store, NewWorkItem item, Clock clock) {
    Pending mine = new Pending(store, item, clock);
    groups.run(List.of(mine));
    return mine.result();
  }

  /**
   * Runs {@code members} (all of this thread) in as few groups as possible: one when they fit one
   * group. For tests of groups of a known composition. Returns when all are done; each carries its
   * outcome.
   */
  void submitAll(List<Pending> members) {
    groups.run(members);
  }

  /** Groups of more than one item written so far. */
  long sharedGroups() {
    return sharedGroups.sum();
  }

  /** Items written in groups of more than one so far. */
  long sharedItems() {
    return sharedItems.sum();
  }

  /** Groups of several that failed and were written again one item at a time. */
  long splitGroups() {
    return splitGroups.sum();
  }

  /** Writes one group of queued enqueues (leader; {@link CallerLedGroups}). */
  private void writeGroup(List<Pending> members) {
    TetherStore store = members.get(0).store;
    try {
      write(store, members);
    } catch (RuntimeException e) {
      if (members.size() > 1 && mayBeOneItems(store, e)) {
        // Nothing of the group was applied: each item alone, so only a failing item fails.
        LOG.debug("A group of {} enqueues failed ({}); writing each alone", members.size(), e.getMessage());
        splitGroups.increment();
        RuntimeException fault = null;
        for (Pending x : members) {
          if (fault != null) {
            x.error = fault; // not tried: nothing of it was written
            continue;
          }
          try {
            write(store, List.of(x));
          } catch (RuntimeException alone) {
            x.error = alone;
            if (!mayBeOneItems(store, alone)) {
              fault = alone; // the store, not the item: the rest would fail the same way
            }
          }
        }
      } else {
        for (Pending x : members) {
          x.error = e;
        }
      }
    } finally {
      // Also when an Error escapes: a member neither written nor failed gets an error, so that
      // its caller does not return an id it never got.
      for (Pending x : members) {
        if (!x.written && x.error == null) {
          x.error = new IllegalStateException("the group writing this enqueue ended without an"
              + " outcome; the item may or may not have been written");
        }
      }
    }
  }

  /** Writes {@code members} as one group and sets their ids; throws if it failed. */
  private void write(TetherStore store, List<Pending> members) {
    List<NewWorkItem> items = new ArrayList<>(members.size());
    List<Clock> clocks = new ArrayList<>(members.size());
    for (Pending x : members) {
      items.add(x.item);
      clocks.add(x.clock);
    }
    String what = members.size() == 1
        ? "enqueueing on queue '" + members.get(0).item.queue() + "'"
        : "enqueueing a group of " + members.size() + " concurrent single enqueues";
    long[] ids = writer.write(store, what, items, clocks);
    for (int i = 0; i < members.size(); i++) {
      members.get(i).id = ids[i];
      members.get(i).written = true;
    }
    if (members.size() > 1) {
      sharedGroups.increment();
      sharedItems.add(members.size());
    }
  }

  /**
   * Whether a group's failure may come from one of its items: a refusal by the database (a
   * constraint, a trigger, a value it cannot store), which left nothing of the one statement
   * applied. Not a store fault (connection, resources, I/O): after one of those it is unknown
   * whether the statement committed, so nothing is written again and every caller gets the error,
   * as a lone enqueue would.
   */
  private static boolean mayBeOneItems(TetherStore store, RuntimeException e) {
    if (!(e instanceof TetherStoreException) || e instanceof StoreUnavailableException) {
      return false;
    }
    Throwable cause = e.getCause();
    return cause instanceof SQLException
        && !StoreErrors.isStoreFault(store.storeEngine(), (SQLException) cause);
  }
}
