package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * The benchmarks' door to the wake-up roster ({@link WakeRoster}), which is internal to the store:
 * lets a harness stand for an idle process that waits for a queue without running a store.
 */
public final class BenchRoster {
  private BenchRoster() {}

  /**
   * On {@code listener} (a connection of its own, kept open): takes a slot of {@code queue} in
   * the roster of {@code schema}, as a store whose receivers wait for the queue does, and returns
   * the slot's channel to {@code LISTEN} on; enqueues of the queue then notify it.
   *
   * @throws IllegalStateException when every slot of the queue is taken
   */
  public static String claimSlot(Connection listener, String schema, String queue) throws SQLException {
    WakeRoster roster = new WakeRoster(schema);
    int slot = roster.claim(listener, queue);
    if (slot < 0) {
      throw new IllegalStateException("every slot of queue '" + queue + "' is taken");
    }
    return roster.channel(queue, slot);
  }

  /**
   * Items written in groups of more than one by the concurrent single enqueues of {@code store}
   * (PostgreSQL), and how many such groups: {@code {items, groups}}; zeros on SQLite.
   */
  public static long[] sharedEnqueueGroups(TetherStore store) {
    if (!(store.storeEngine() instanceof PostgresEngine)) {
      return new long[2];
    }
    EnqueueGroups g = ((PostgresEngine) store.storeEngine()).enqueueGroups();
    return new long[] {g.sharedItems(), g.sharedGroups()};
  }
}
