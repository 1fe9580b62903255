package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;

/**
 * The SQL of operators' actions on single items: cancel ({@link QueueAdmin}) and redrive ({@link
 * LeaseManager#redrive}), each with its checkpoint. Methods run on the caller's connection inside
 * the caller's write transaction. Stateless apart from its collaborators, so thread-safe.
 */
final class OperatorActions {
  private final StoreEngine engine;
  private final Checkpoints checkpoints;

  OperatorActions(StoreEngine engine, Checkpoints checkpoints) {
    this.engine = engine;
    this.checkpoints = checkpoints;
  }

  /**
   * Fails a pending or in-progress item whatever lease holds it; returns false (changing nothing)
   * if the item is unknown or already finished. Clears the lease token, so any holder's later
   * renew, ack or release is refused.
   */
  boolean cancel(Connection c, long id, String reason, Instant now) throws SQLException {
    String status;
    String holder;
    Long token;
    int deliveries;
    Instant heartbeat;
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT status, lease_holder, lease_token, delivery_count, heartbeat_at FROM work_items"
                + " WHERE id = ?" + engine.forUpdate())) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return false;
        }
        status = rs.getString("status");
        holder = rs.getString("lease_holder");
        token = ItemReads.getLongOrNull(rs, "lease_token");
        deliveries = rs.getInt("delivery_count");
        heartbeat = engine.getInstant(rs, "heartbeat_at");
      }
    }
    if (!WorkStatus.PENDING.dbValue().equals(status) && !WorkStatus.IN_PROGRESS.dbValue().equals(status)) {
      return false;
    }
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE work_items SET status = 'failed', lease_token = NULL, lease_expires_at = NULL,"
                + " error_message = ?, completed_at = ?, updated_at = ? WHERE id = ? AND status = ?"
                + (token == null ? " AND lease_token IS NULL" : " AND lease_token = ?"))) {
      ps.setString(1, reason);
      engine.setInstant(ps, 2, now);
      engine.setInstant(ps, 3, now);
      ps.setLong(4, id);
      ps.setString(5, status);
      if (token != null) {
        ps.setLong(6, token);
      }
      if (ps.executeUpdate() != 1) {
        // The row is locked (PostgreSQL) or the write transaction is exclusive (SQLite).
        throw new IllegalStateException(
            "conditional cancel of work item " + id + " matched no row although it was just read as '"
                + status + "'; indicates a bug");
      }
    }
    checkpoints.insert(c, Checkpoint.CANCELLED,
        new Checkpoints.Entry(id, holder, token, deliveries, heartbeat, reason), now);
    return true;
  }

  /**
   * Requeues one {@code failed} item: pending at once, its delivery count kept and its budget
   * raised to {@code deliveryCount + additionalAttempts}, with a {@code redriven} checkpoint.
   * Returns false (changing nothing) if the item is not failed.
   */
  boolean redrive(Connection c, long id, int additionalAttempts, Instant now) throws SQLException {
    int count;
    int max;
    try (PreparedStatement sel = c.prepareStatement(
        "SELECT delivery_count, max_attempts FROM work_items WHERE id = ? AND status = 'failed'")) {
      sel.setLong(1, id);
      try (ResultSet rs = sel.executeQuery()) {
        if (!rs.next()) {
          return false;
        }
        count = rs.getInt(1);
        max = rs.getInt(2);
      }
    }
    int newMax = count + additionalAttempts;
    try (PreparedStatement ps = c.prepareStatement(
        "UPDATE work_items SET status = 'pending', max_attempts = ?, lease_holder = NULL,"
            + " lease_token = NULL, lease_expires_at = NULL, available_at = ?, scheduled = FALSE,"
            + " completed_at = NULL, updated_at = ? WHERE id = ? AND status = 'failed' AND delivery_count = ?")) {
      ps.setInt(1, newMax);
      engine.setInstant(ps, 2, now);
      engine.setInstant(ps, 3, now);
      ps.setLong(4, id);
      ps.setInt(5, count);
      if (ps.executeUpdate() != 1) {
        return false;
      }
    }
    checkpoints.insert(c, Checkpoint.REDRIVEN, new Checkpoints.Entry(id, null, null, count, null,
        "requeued by an operator after " + count + " deliveries (max attempts " + max + " -> "
            + newMax + ", " + additionalAttempts + " more)"), now);
    return true;
  }
}
