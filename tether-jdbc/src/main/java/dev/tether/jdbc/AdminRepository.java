package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The SQL of the listings and counts of {@link QueueMonitor} and of the operator actions of {@link
 * QueueAdmin} and {@link LeaseManager} (cancel, redrive, purge). Kept apart from the lease state
 * machine's classes. Methods run on the caller's connection inside the caller's transaction (or
 * in auto-commit for reads); stateless apart from its collaborators, so thread-safe.
 */
final class AdminRepository {
  private static final String ITEM_COLUMNS =
      "id, queue, task_id, work_type, status, priority, lease_holder, lease_token,"
          + " lease_acquired_at, lease_expires_at, heartbeat_at, delivery_count, max_attempts,"
          + " available_at, idempotency_key, reply_to, input_data, output_data, error_message,"
          + " created_at, started_at, completed_at, updated_at";

  private final StoreEngine engine;
  private final ItemReads rows; // its row mapping, so a WorkItem is read one way
  private final Checkpoints checkpoints;

  AdminRepository(StoreEngine engine, ItemReads rows, Checkpoints checkpoints) {
    this.engine = engine;
    this.rows = rows;
    this.checkpoints = checkpoints;
  }

  // ---------------------------------------------------------------- reads

  List<WorkItem> items(Connection c, ItemQuery q) throws SQLException {
    StringBuilder sql = new StringBuilder("SELECT ").append(ITEM_COLUMNS).append(" FROM work_items");
    List<String> where = new ArrayList<>(2);
    if (q.queue() != null) {
      where.add("queue = ?");
    }
    if (q.status() != null) {
      where.add("status = ?");
    }
    if (!where.isEmpty()) {
      sql.append(" WHERE ").append(String.join(" AND ", where));
    }
    switch (q.order()) {
      case NEWEST_FIRST:
        sql.append(" ORDER BY id DESC");
        break;
      case LEASE_EXPIRY_FIRST:
        // In-progress rows always have an expiry (and an index on it); otherwise NULLs go last
        // on both engines (SQLite would put them first).
        sql.append(q.status() == WorkStatus.IN_PROGRESS
            ? " ORDER BY lease_expires_at, id"
            : " ORDER BY CASE WHEN lease_expires_at IS NULL THEN 1 ELSE 0 END, lease_expires_at, id");
        break;
      default:
        throw new IllegalStateException("unhandled order " + q.order() + "; indicates a bug");
    }
    sql.append(" LIMIT ?");
    try (PreparedStatement ps = c.prepareStatement(sql.toString())) {
      int i = 1;
      if (q.queue() != null) {
        ps.setString(i++, q.queue());
      }
      if (q.status() != null) {
        ps.setString(i++, q.status().dbValue());
      }
      ps.setInt(i, q.limit());
      List<WorkItem> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rows.map(rs, List.of()));
        }
      }
      return out;
    }
  }

  long pendingCount(Connection c, String queue) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT " + Inserts.PENDING_COUNT)) {
      ps.setString(1, queue);
      ps.setString(2, queue);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  SortedMap<String, Long> checkpointCounts(Connection c) throws SQLException {
    SortedMap<String, Long> out = new TreeMap<>();
    try (PreparedStatement ps =
            c.prepareStatement("SELECT kind, COUNT(*) FROM work_item_checkpoints GROUP BY kind");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        out.put(rs.getString(1), rs.getLong(2));
      }
    }
    return out;
  }

  // ---------------------------------------------------------------- operator actions

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

  /** Deletes completed items with {@code completed_at < before} and their checkpoints. */
  int purgeCompleted(Connection c, Instant before) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "DELETE FROM work_item_checkpoints WHERE item_id IN (SELECT id FROM work_items"
                + " WHERE status = 'completed' AND completed_at < ?)")) {
      engine.setInstant(ps, 1, before);
      ps.executeUpdate();
    }
    try (PreparedStatement ps =
        c.prepareStatement("DELETE FROM work_items WHERE status = 'completed' AND completed_at < ?")) {
      engine.setInstant(ps, 1, before);
      return ps.executeUpdate();
    }
  }
}
