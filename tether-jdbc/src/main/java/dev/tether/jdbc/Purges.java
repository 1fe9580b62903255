package dev.tether.jdbc;

import static dev.tether.jdbc.OverviewQueries.statusTerm;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;

/**
 * The SQL that deletes items and checkpoints: an operator's purge of completed items ({@link
 * QueueAdmin}), a mailbox's purge of its unfinished messages ({@link JdbcMailbox#purge}), and the
 * sweep's retention cleanup ({@link RecoverySweep#cleanup}). An item's checkpoints go with it.
 * Methods run on the caller's connection inside the caller's write transaction. Stateless apart
 * from the engine, so thread-safe.
 */
final class Purges {
  private final StoreEngine engine;

  Purges(StoreEngine engine) {
    this.engine = engine;
  }

  /** Deletes completed items with {@code completed_at < before} and their checkpoints. */
  int purgeCompleted(Connection c, Instant before) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "DELETE FROM tether_work_item_checkpoints WHERE item_id IN (SELECT id FROM tether_work_items"
                + " WHERE " + COMPLETED_BEFORE + ")")) {
      engine.setInstant(ps, 1, before);
      ps.executeUpdate();
    }
    try (PreparedStatement ps = c.prepareStatement(DELETE_COMPLETED)) {
      engine.setInstant(ps, 1, before);
      return ps.executeUpdate();
    }
  }

  /**
   * Pending or in progress, as two conditions each of which an index holds (schema 9): the pending
   * rows' {@code (queue, status, id)} and the leased rows' {@code (queue, lease_expires_at)}.
   */
  private static final String UNFINISHED =
      "((" + statusTerm(WorkStatus.PENDING) + ") OR " + statusTerm(WorkStatus.IN_PROGRESS) + ")";

  /** A queue's pending and in-progress items. Parameter: the queue. */
  static final String DELETE_UNFINISHED = "DELETE FROM tether_work_items WHERE queue = ? AND " + UNFINISHED;

  /**
   * Completed and finished before an instant, with the {@code (status, id)} index's condition word
   * for word (SQLite). Parameter: the instant.
   */
  private static final String COMPLETED_BEFORE = statusTerm(WorkStatus.COMPLETED) + " AND completed_at < ?";

  /** Completed items finished before an instant. Parameter: the instant. */
  static final String DELETE_COMPLETED = "DELETE FROM tether_work_items WHERE " + COMPLETED_BEFORE;

  /** Deletes the pending and in-progress items of {@code queue} and their checkpoints; returns how many items. */
  long purgeUnfinished(Connection c, String queue) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "DELETE FROM tether_work_item_checkpoints WHERE item_id IN (SELECT id FROM tether_work_items"
            + " WHERE queue = ? AND " + UNFINISHED + ")")) {
      ps.setString(1, queue);
      ps.executeUpdate();
    }
    try (PreparedStatement ps = c.prepareStatement(DELETE_UNFINISHED)) {
      ps.setString(1, queue);
      return ps.executeUpdate();
    }
  }

  /**
   * Retention: deletes finished items completed before {@code finishedBefore} (null: keep them)
   * with their checkpoints, checkpoints created before {@code checkpointsBefore} (null: keep
   * them), and each item's checkpoints beyond its newest {@code perItem}; returns how many rows.
   */
  long retain(Connection c, Instant finishedBefore, Instant checkpointsBefore, int perItem) throws SQLException {
    long deleted = 0;
    if (finishedBefore != null) {
      try (PreparedStatement ps = c.prepareStatement(
          "DELETE FROM tether_work_item_checkpoints WHERE item_id IN (SELECT id FROM tether_work_items"
              + " WHERE status IN ('completed', 'failed', 'cancelled') AND completed_at < ?)")) {
        engine.setInstant(ps, 1, finishedBefore);
        deleted += ps.executeUpdate();
      }
      try (PreparedStatement ps = c.prepareStatement(
          "DELETE FROM tether_work_items WHERE status IN ('completed', 'failed', 'cancelled') AND completed_at < ?")) {
        engine.setInstant(ps, 1, finishedBefore);
        deleted += ps.executeUpdate();
      }
    }
    if (checkpointsBefore != null) {
      try (PreparedStatement ps = c.prepareStatement("DELETE FROM tether_work_item_checkpoints WHERE created_at < ?")) {
        engine.setInstant(ps, 1, checkpointsBefore);
        deleted += ps.executeUpdate();
      }
    }
    try (PreparedStatement ps = c.prepareStatement(
        "DELETE FROM tether_work_item_checkpoints WHERE id IN (SELECT id FROM (SELECT id, ROW_NUMBER()"
            + " OVER (PARTITION BY item_id ORDER BY id DESC) AS rn FROM tether_work_item_checkpoints) ranked"
            + " WHERE rn > ?)")) {
      ps.setInt(1, perItem);
      deleted += ps.executeUpdate();
    }
    return deleted;
  }
}
