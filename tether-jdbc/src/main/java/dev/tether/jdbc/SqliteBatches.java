package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * SQLite's forms of the statements whose PostgreSQL forms bind arrays: a batch enqueue as one
 * multi-row {@code INSERT}, and takes, reclaims and checkpoints as JDBC batches of per-row
 * statements, each row a conditional update; plus the probe for expired leases the full
 * acquisition starts with. Stateless apart from the engine, so thread-safe.
 */
final class SqliteBatches {
  private static final String ANY_EXPIRED =
      "SELECT 1 FROM tether_work_items WHERE queue = ? AND status = 'in_progress'"
          + " AND lease_expires_at <= ? LIMIT 1";

  private static final String TAKE =
      "UPDATE tether_work_items SET status = 'in_progress', lease_holder = ?, lease_token = ?,"
          + " lease_acquired_at = ?, lease_expires_at = ?, heartbeat_at = ?,"
          + " delivery_count = delivery_count + 1, attempts = attempts + 1,"
          + " started_at = COALESCE(started_at, ?),"
          + " updated_at = ? WHERE id = ? AND status = 'pending'";

  private static final String RECLAIM =
      "UPDATE tether_work_items SET status = ?, lease_holder = NULL, lease_token = NULL,"
          + " lease_expires_at = NULL, available_at = ?, scheduled = FALSE, error_message = ?,"
          + " completed_at = ?, updated_at = ? WHERE id = ? AND status = 'in_progress' AND lease_token = ?"
          + " AND lease_expires_at <= ?";

  private final StoreEngine engine;

  SqliteBatches(StoreEngine engine) {
    this.engine = engine;
  }

  /** Inserts 2 to {@link SqliteEngine#INSERT_CHUNK} keyless items in one statement; ids in any order. */
  List<Long> insertRun(Connection c, List<NewWorkItem> run, Instant now) throws SQLException {
    StringBuilder sql = new StringBuilder(
        "INSERT INTO tether_work_items (queue, task_id, work_type, status, priority, delivery_count,"
            + " max_attempts, available_at, idempotency_key, reply_to, input_data, created_at,"
            + " updated_at, scheduled, headers) VALUES ");
    for (int i = 0; i < run.size(); i++) {
      sql.append(i == 0 ? "" : ", ").append("(?, ?, ?, 'pending', ?, 0, ?, ?, NULL, ?, ?, ?, ?, ?, ?)");
    }
    sql.append(" RETURNING id");
    List<Long> ids = new ArrayList<>(run.size());
    try (PreparedStatement ps = c.prepareStatement(sql.toString())) {
      int p = 1;
      for (NewWorkItem item : run) {
        ps.setString(p++, item.queue());
        ps.setString(p++, item.taskId());
        ps.setString(p++, item.workType());
        ps.setInt(p++, item.priority());
        ps.setInt(p++, item.maxAttempts());
        engine.setInstant(ps, p++, now.plus(item.delay()));
        ps.setString(p++, item.replyTo());
        engine.setBytes(ps, p++, item.inputUnsafe());
        engine.setInstant(ps, p++, now);
        engine.setInstant(ps, p++, now);
        ps.setBoolean(p++, Inserts.scheduled(item));
        ps.setString(p++, item.headersColumn());
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getLong(1));
        }
      }
    }
    return ids;
  }

  /** Whether {@code queue} holds an in-progress item whose lease expired at {@code now}. */
  boolean anyExpired(Connection c, Statements statements, String queue, Instant now) throws SQLException {
    try (StatementCache.Stmt st = statements.prepare(c, ANY_EXPIRED)) {
      PreparedStatement ps = st.ps();
      ps.setString(1, queue);
      engine.setInstant(ps, 2, now);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /** Leases the picked pending items with their tokens; returns the ids whose update matched. */
  Set<Long> takeAll(Connection c, Statements statements, List<Lease> picked, String holder,
      Instant now, Instant expires) throws SQLException {
    int[] counts;
    try (StatementCache.Stmt st = statements.prepare(c, TAKE)) {
      PreparedStatement take = st.ps();
      for (Lease l : picked) {
        take.setString(1, holder);
        take.setLong(2, l.token());
        engine.setInstant(take, 3, now);
        engine.setInstant(take, 4, expires);
        engine.setInstant(take, 5, now);
        engine.setInstant(take, 6, now);
        engine.setInstant(take, 7, now);
        take.setLong(8, l.itemId());
        take.addBatch();
      }
      counts = take.executeBatch();
    }
    Set<Long> matched = new HashSet<>();
    for (int i = 0; i < counts.length; i++) {
      if (counts[i] == 1) {
        matched.add(picked.get(i).itemId());
      }
    }
    return matched;
  }

  /** Reclaims the expired leases, one conditional update each; returns those it changed, in order. */
  List<ExpiredLeases.Expired> reclaimAll(Connection c, List<ExpiredLeases.Expired> expired, Instant now)
      throws SQLException {
    int[] counts;
    try (PreparedStatement ps = c.prepareStatement(RECLAIM)) {
      for (ExpiredLeases.Expired e : expired) {
        ps.setString(1, e.isLast() ? WorkStatus.FAILED.dbValue() : WorkStatus.PENDING.dbValue());
        engine.setInstant(ps, 2, now);
        ps.setString(3, e.reason());
        engine.setInstant(ps, 4, e.isLast() ? now : null);
        engine.setInstant(ps, 5, now);
        ps.setLong(6, e.id());
        ps.setLong(7, e.token());
        engine.setInstant(ps, 8, now);
        ps.addBatch();
      }
      counts = ps.executeBatch();
    }
    List<ExpiredLeases.Expired> reclaimed = new ArrayList<>();
    for (int i = 0; i < counts.length; i++) {
      if (counts[i] == Statement.SUCCESS_NO_INFO || counts[i] < 0) {
        throw new IllegalStateException("the JDBC driver did not report the update count of a"
            + " conditional update; Tether needs exact counts for fencing");
      }
      if (counts[i] == 1) {
        reclaimed.add(expired.get(i));
      }
    }
    return reclaimed;
  }

  /** Inserts checkpoints of one kind, one batched row each, all at {@code now}. */
  void insertCheckpoints(Connection c, String kind, List<Checkpoints.Entry> entries, Instant now)
      throws SQLException {
    try (PreparedStatement cp = c.prepareStatement(Checkpoints.INSERT)) {
      for (Checkpoints.Entry e : entries) {
        Checkpoints.bind(engine, cp, kind, e, now);
        cp.addBatch();
      }
      cp.executeBatch();
    }
  }
}
