package dev.tether.jdbc;

import static dev.tether.jdbc.OverviewQueries.statusTerm;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Reads of whole items: one item with its audit trail, a row mapped to a {@link WorkItem} (the one
 * mapping every listing uses), and the ids of a queue's dead letters. Stateless apart from its
 * collaborators, so thread-safe.
 */
final class ItemReads {
  private final StoreEngine engine;
  private final Checkpoints checkpoints;

  ItemReads(StoreEngine engine, Checkpoints checkpoints) {
    this.engine = engine;
    this.checkpoints = checkpoints;
  }

  /** Reads a nullable long column. */
  static Long getLongOrNull(ResultSet rs, String column) throws SQLException {
    long v = rs.getLong(column);
    return rs.wasNull() ? null : v;
  }

  /** Reads a nullable int column. */
  static Integer getIntOrNull(ResultSet rs, String column) throws SQLException {
    int v = rs.getInt(column);
    return rs.wasNull() ? null : v;
  }

  /** The item, with its checkpoints (oldest first) when asked, or empty if unknown. */
  Optional<WorkItem> find(Connection c, long id, boolean withCheckpoints) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT * FROM tether_work_items WHERE id = ?")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        return Optional.of(map(rs, withCheckpoints ? checkpoints.of(c, id) : List.of()));
      }
    }
  }

  /** The item of the current row (every column of {@code tether_work_items}). */
  WorkItem map(ResultSet rs, List<Checkpoint> trail) throws SQLException {
    return new WorkItem(
        rs.getLong("id"),
        rs.getString("queue"),
        rs.getString("task_id"),
        rs.getString("work_type"),
        WorkStatus.fromDb(rs.getString("status")),
        rs.getInt("priority"),
        rs.getString("lease_holder"),
        getLongOrNull(rs, "lease_token"),
        engine.getInstant(rs, "lease_acquired_at"),
        engine.getInstant(rs, "lease_expires_at"),
        engine.getInstant(rs, "heartbeat_at"),
        rs.getInt("delivery_count"),
        rs.getInt("attempts"),
        rs.getInt("max_attempts"),
        engine.getInstant(rs, "available_at"),
        rs.getString("idempotency_key"),
        rs.getString("reply_to"),
        rs.getBytes("input_data"),
        rs.getBytes("output_data"),
        rs.getString("error_message"),
        engine.getInstant(rs, "created_at"),
        engine.getInstant(rs, "started_at"),
        engine.getInstant(rs, "completed_at"),
        engine.getInstant(rs, "updated_at"),
        trail,
        rs.getBytes("progress"),
        engine.getInstant(rs, "progress_at"),
        getIntOrNull(rs, "progress_delivery"),
        getLongOrNull(rs, "reply_of"),
        rs.getBoolean("reply_error"),
        rs.getString("stdout_tail"),
        rs.getString("stderr_tail"),
        engine.getInstant(rs, "output_at"),
        getIntOrNull(rs, "output_delivery"));
  }

  /** A queue's failed items' ids, oldest first, with the index's condition word for word (SQLite). */
  static final String FAILED_IDS =
      "SELECT id FROM tether_work_items WHERE queue = ? AND " + statusTerm(WorkStatus.FAILED)
          + " ORDER BY completed_at, id";

  /** The ids of the queue's {@code failed} items, oldest first. */
  List<Long> failedIds(Connection c, String queue) throws SQLException {
    List<Long> ids = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(FAILED_IDS)) {
      ps.setString(1, queue);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getLong(1));
        }
      }
    }
    return ids;
  }
}
