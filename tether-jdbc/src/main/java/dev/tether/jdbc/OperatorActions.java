package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;

/**
 * The SQL of operators' actions on single items: cancel ({@link QueueAdmin}, {@link
 * JdbcMailbox#cancel}) and redrive ({@link LeaseManager#redrive}), each with its checkpoint. Methods run on the caller's connection inside
 * the caller's write transaction. Stateless apart from its collaborators, so thread-safe.
 */
final class OperatorActions {
  private final StoreEngine engine;
  private final Checkpoints checkpoints;
  private final Replies replies;

  OperatorActions(StoreEngine engine, Checkpoints checkpoints, Replies replies) {
    this.engine = engine;
    this.checkpoints = checkpoints;
    this.replies = replies;
  }

  /**
   * Cancels a pending or in-progress item whatever lease holds it: it ends {@code cancelled} and
   * its requester, if any, gets an error reply; returns false (changing nothing) if the item is
   * unknown or already finished. Clears the lease token, so any holder's later renew, checkpoint,
   * ack or release is refused (as cancelled).
   */
  boolean cancel(Connection c, long id, String reason, Instant now) throws SQLException {
    String status;
    String holder;
    Long token;
    int deliveries;
    int attempts;
    String replyTo;
    Instant heartbeat;
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT status, lease_holder, lease_token, delivery_count, attempts, reply_to, heartbeat_at"
                + " FROM tether_work_items WHERE id = ?" + engine.forUpdate())) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return false;
        }
        status = rs.getString("status");
        holder = rs.getString("lease_holder");
        token = ItemReads.getLongOrNull(rs, "lease_token");
        deliveries = rs.getInt("delivery_count");
        attempts = rs.getInt("attempts");
        replyTo = rs.getString("reply_to");
        heartbeat = engine.getInstant(rs, "heartbeat_at");
      }
    }
    if (!WorkStatus.PENDING.dbValue().equals(status) && !WorkStatus.IN_PROGRESS.dbValue().equals(status)) {
      return false;
    }
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE tether_work_items SET status = 'cancelled', lease_token = NULL, lease_expires_at = NULL,"
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
    if (token != null) {
      engine.notifyCancelled(c, id);
    }
    replies.answerWithError(c, id, replyTo, reason, attempts, true, now);
    return true;
  }

  /**
   * Requeues one {@code failed} or {@code cancelled} item (a redrive): pending at once with a
   * fresh budget (its charged attempts start again from zero), of {@code maxAttempts} attempts
   * when given (null: the item's own), its delivery count and progress checkpoint kept, with a
   * {@code redriven} checkpoint. Returns false (changing nothing) if the item is neither.
   */
  boolean redrive(Connection c, long id, Integer maxAttempts, Instant now) throws SQLException {
    int count;
    int attempts;
    int max;
    String status;
    try (PreparedStatement sel = c.prepareStatement(
        // locked (PostgreSQL) as cancel locks it: the update below keeps the budget read here,
        // which another operator's redrive and cancel committed meanwhile would otherwise change
        "SELECT delivery_count, attempts, max_attempts, status FROM tether_work_items WHERE id = ?"
            + " AND status IN ('failed', 'cancelled')" + engine.forUpdate())) {
      sel.setLong(1, id);
      try (ResultSet rs = sel.executeQuery()) {
        if (!rs.next()) {
          return false;
        }
        count = rs.getInt(1);
        attempts = rs.getInt(2);
        max = rs.getInt(3);
        status = rs.getString(4);
      }
    }
    int newMax = maxAttempts == null ? max : maxAttempts;
    try (PreparedStatement ps = c.prepareStatement(
        "UPDATE tether_work_items SET status = 'pending', attempts = 0, max_attempts = ?,"
            + " lease_holder = NULL, lease_token = NULL, lease_expires_at = NULL, available_at = ?,"
            + " scheduled = FALSE, completed_at = NULL, updated_at = ?"
            + " WHERE id = ? AND status = ? AND delivery_count = ?")) {
      ps.setInt(1, newMax);
      engine.setInstant(ps, 2, now);
      engine.setInstant(ps, 3, now);
      ps.setLong(4, id);
      ps.setString(5, status);
      ps.setInt(6, count);
      if (ps.executeUpdate() != 1) {
        return false;
      }
    }
    checkpoints.insert(c, Checkpoint.REDRIVEN, new Checkpoints.Entry(id, null, null, count, null,
        "requeued from '" + status + "' after " + count + " deliveries and " + attempts
            + " charged attempts, with a fresh budget of " + newMax + " attempts"), now);
    return true;
  }
}
