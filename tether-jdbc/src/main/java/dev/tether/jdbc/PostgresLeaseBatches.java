package dev.tether.jdbc;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * PostgreSQL's set-based forms of the per-lease updates: one statement, whatever the number of
 * leases, with one array per column, each row still a conditional update on (id, token, status).
 * Takes of picked items, completions, renewals, reclaims of expired leases and their checkpoints.
 * The statements that run without a transaction take "now" as a parameter: null in production (the
 * statement reads {@code clock_timestamp()}), a test clock's instant otherwise. Stateless apart
 * from the engine, so thread-safe.
 *
 * <p>Completions and renewals find their rows by primary key, whatever the state of the partial
 * indexes. They say "in progress" as {@code status NOT IN ('pending', 'completed', 'failed', 'cancelled')}
 * (the same rows as {@code status = 'in_progress'} under the CHECK constraint) so that the planner
 * cannot answer it with the partial indexes on {@code status = 'in_progress'}, and hide the row
 * count of their arrays behind {@code LIMIT (SELECT cardinality(ids))} (no limit in fact: the
 * arrays' length) so that it plans one row and a primary-key probe for it rather than a
 * sequential scan. With {@code status = 'in_progress'} the planner chose, while the partial
 * indexes were small, a scan of a whole partial index (every queue's leases) joined by hash, and
 * kept that plan while the index filled with the entries of rows that had left in-progress (dead
 * until vacuum), which a group then read in full.
 */
final class PostgresLeaseBatches {
  private static final String TAKE_ALL =
      "UPDATE tether_work_items w SET status = 'in_progress', lease_holder = ?, lease_token = v.token,"
          + " lease_acquired_at = ?, lease_expires_at = ?, heartbeat_at = ?,"
          + " delivery_count = w.delivery_count + 1, attempts = w.attempts + 1,"
          + " started_at = COALESCE(w.started_at, ?),"
          + " updated_at = ? FROM unnest(?::bigint[], ?::bigint[]) AS v(id, token)"
          + " WHERE w.id = v.id AND w.status = 'pending' RETURNING w.id";

  /** Completions without output at one instant. Parameters: now, now (null: the database clock), ids, tokens, ids. */
  static final String COMPLETE_ALL =
      "UPDATE tether_work_items w SET status = 'completed', output_data = NULL, lease_expires_at = NULL,"
          + " error_message = NULL, completed_at = COALESCE(?::timestamptz, date_trunc('milliseconds', clock_timestamp())),"
          + " updated_at = COALESCE(?::timestamptz, date_trunc('milliseconds', clock_timestamp()))"
          + " FROM (SELECT * FROM unnest(?::bigint[], ?::bigint[]) AS u(id, token)"
          + " LIMIT (SELECT cardinality(?::bigint[]))) AS v(id, token)"
          + " WHERE w.id = v.id AND w.lease_token = v.token"
          + " AND w.status NOT IN ('pending', 'completed', 'failed', 'cancelled')"
          + " RETURNING w.id, w.lease_token";

  /** A group of one: a plain UPDATE by primary key (no arrays to bind, unnest or join). */
  private static final String COMPLETE_ONE =
      "UPDATE tether_work_items SET status = 'completed', output_data = NULL, lease_expires_at = NULL,"
          + " error_message = NULL, completed_at = COALESCE(?::timestamptz, date_trunc('milliseconds', clock_timestamp())),"
          + " updated_at = COALESCE(?::timestamptz, date_trunc('milliseconds', clock_timestamp()))"
          + " WHERE id = ? AND lease_token = ? AND status NOT IN ('pending', 'completed', 'failed', 'cancelled')";

  /**
   * Renewals, each to {@code max(current expiry, now + extension)} at its own instant.
   * Parameters: ids, tokens, extension millis, instants (epoch millis, null: the database clock),
   * ids.
   */
  static final String RENEW_ALL =
      "UPDATE tether_work_items w SET lease_expires_at = GREATEST(w.lease_expires_at,"
          + " v.now + v.extend_ms * interval '1 millisecond'), heartbeat_at = v.now, updated_at = v.now"
          + " FROM (SELECT u.id, u.token, u.extend_ms, COALESCE(to_timestamp(u.at_ms / 1000.0),"
          + " date_trunc('milliseconds', clock_timestamp())) AS now"
          + " FROM unnest(?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[]) AS u(id, token, extend_ms, at_ms)"
          + " LIMIT (SELECT cardinality(?::bigint[]))) v"
          + " WHERE w.id = v.id AND w.lease_token = v.token"
          + " AND w.status NOT IN ('pending', 'completed', 'failed', 'cancelled')"
          + " RETURNING w.id, w.lease_token, w.lease_expires_at";

  private static final String RECLAIM_ALL =
      "UPDATE tether_work_items w SET status = v.new_status, lease_holder = NULL, lease_token = NULL,"
          + " lease_expires_at = NULL, available_at = ?, scheduled = FALSE, error_message = v.reason,"
          + " completed_at = CASE WHEN v.new_status = 'failed' THEN ?::timestamptz END, updated_at = ?"
          + " FROM unnest(?::bigint[], ?::bigint[], ?::text[], ?::text[]) AS v(id, token, new_status, reason)"
          + " WHERE w.id = v.id AND w.status = 'in_progress' AND w.lease_token = v.token"
          + " AND w.lease_expires_at <= ? RETURNING w.id";

  private static final String CHECKPOINT_ALL =
      "INSERT INTO tether_work_item_checkpoints (item_id, kind, lease_holder, lease_token, delivery_count,"
          + " heartbeat_at, reason, created_at, stdout_tail, stderr_tail) SELECT v.id, ?, v.holder,"
          + " v.token, v.delivery_count, to_timestamp(v.heartbeat_ms / 1000.0), v.reason, ?,"
          + " w.stdout_tail, w.stderr_tail"
          + " FROM unnest(?::bigint[], ?::text[], ?::bigint[], ?::int[], ?::bigint[], ?::text[])"
          + " AS v(id, holder, token, delivery_count, heartbeat_ms, reason)"
          + " LEFT JOIN tether_work_items w ON w.id = v.id AND w.output_delivery = v.delivery_count"
          + " AND ?::boolean";

  private final StoreEngine engine;

  PostgresLeaseBatches(StoreEngine engine) {
    this.engine = engine;
  }

  /** Leases the picked pending items with their tokens; returns the ids whose update matched. */
  Set<Long> takeAll(Connection c, List<Lease> picked, String holder, Instant now, Instant expires)
      throws SQLException {
    Long[] ids = new Long[picked.size()];
    Long[] tokens = new Long[picked.size()];
    for (int i = 0; i < picked.size(); i++) {
      ids[i] = picked.get(i).itemId();
      tokens[i] = picked.get(i).token();
    }
    Set<Long> matched = new HashSet<>();
    try (PreparedStatement ps = c.prepareStatement(TAKE_ALL)) {
      ps.setString(1, holder);
      engine.setInstant(ps, 2, now);
      engine.setInstant(ps, 3, expires);
      engine.setInstant(ps, 4, now);
      engine.setInstant(ps, 5, now);
      engine.setInstant(ps, 6, now);
      ps.setArray(7, c.createArrayOf("bigint", ids));
      ps.setArray(8, c.createArrayOf("bigint", tokens));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          matched.add(rs.getLong(1));
        }
      }
    }
    return matched;
  }

  /**
   * Completes the leases in one statement when none has output and all share one instant (null:
   * the database clock); returns the leases completed, or empty otherwise.
   */
  Optional<Set<LeaseKey>> completeAll(Connection c, List<LeaseBatches.Finish> finishes) throws SQLException {
    Instant now = finishes.get(0).now();
    for (LeaseBatches.Finish f : finishes) {
      if (f.output() != null || !Objects.equals(f.now(), now)) {
        return Optional.empty();
      }
    }
    Set<LeaseKey> completed = new HashSet<>();
    if (finishes.size() == 1) {
      LeaseBatches.Finish f = finishes.get(0);
      try (PreparedStatement ps = c.prepareStatement(COMPLETE_ONE)) {
        engine.setInstant(ps, 1, now);
        engine.setInstant(ps, 2, now);
        ps.setLong(3, f.id());
        ps.setLong(4, f.token());
        if (ps.executeUpdate() == 1) {
          completed.add(f.key());
        }
      }
      return Optional.of(completed);
    }
    Long[] ids = new Long[finishes.size()];
    Long[] tokens = new Long[finishes.size()];
    for (int i = 0; i < finishes.size(); i++) {
      ids[i] = finishes.get(i).id();
      tokens[i] = finishes.get(i).token();
    }
    try (PreparedStatement ps = c.prepareStatement(COMPLETE_ALL)) {
      engine.setInstant(ps, 1, now);
      engine.setInstant(ps, 2, now);
      Array idArray = c.createArrayOf("bigint", ids);
      ps.setArray(3, idArray);
      ps.setArray(4, c.createArrayOf("bigint", tokens));
      ps.setArray(5, idArray);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          completed.add(new LeaseKey(rs.getLong(1), rs.getLong(2)));
        }
      }
    }
    return Optional.of(completed);
  }

  /** Renews the leases in one statement; returns the new expiry of each lease renewed. */
  Map<LeaseKey, Instant> renewAll(Connection c, List<LeaseBatches.Renewal> renewals) throws SQLException {
    // One row per lease: duplicates would make the join update a row with an arbitrary one.
    Map<LeaseKey, LeaseBatches.Renewal> unique = new LinkedHashMap<>();
    for (LeaseBatches.Renewal r : renewals) {
      unique.merge(r.key(), r,
          (a, b) -> a.now() == null || b.now() == null
              ? (a.duration().compareTo(b.duration()) >= 0 ? a : b)
              : (a.now().plus(a.duration()).isAfter(b.now().plus(b.duration())) ? a : b));
    }
    int n = unique.size();
    Long[] ids = new Long[n];
    Long[] tokens = new Long[n];
    Long[] extend = new Long[n];
    Long[] at = new Long[n];
    int i = 0;
    for (LeaseBatches.Renewal r : unique.values()) {
      ids[i] = r.id();
      tokens[i] = r.token();
      extend[i] = r.duration().toMillis();
      at[i] = r.now() == null ? null : r.now().toEpochMilli();
      i++;
    }
    Map<LeaseKey, Instant> renewed = new HashMap<>();
    try (PreparedStatement ps = c.prepareStatement(RENEW_ALL)) {
      ps.setArray(1, c.createArrayOf("bigint", ids));
      ps.setArray(2, c.createArrayOf("bigint", tokens));
      ps.setArray(3, c.createArrayOf("bigint", extend));
      ps.setArray(4, c.createArrayOf("bigint", at));
      ps.setArray(5, c.createArrayOf("bigint", ids));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          renewed.put(new LeaseKey(rs.getLong(1), rs.getLong(2)), engine.getInstant(rs, "lease_expires_at"));
        }
      }
    }
    return renewed;
  }

  /**
   * Reclaims the expired leases in one set-based UPDATE, still conditional per row on (id, token,
   * status, expiry); returns those it changed, in order, once each.
   */
  List<ExpiredLeases.Expired> reclaimAll(Connection c, List<ExpiredLeases.Expired> expired, Instant now)
      throws SQLException {
    int n = expired.size();
    Long[] ids = new Long[n];
    Long[] tokens = new Long[n];
    String[] statuses = new String[n];
    String[] reasons = new String[n];
    for (int i = 0; i < n; i++) {
      ExpiredLeases.Expired e = expired.get(i);
      ids[i] = e.id();
      tokens[i] = e.token();
      statuses[i] = e.isLast() ? WorkStatus.FAILED.dbValue() : WorkStatus.PENDING.dbValue();
      reasons[i] = e.reason();
    }
    Set<Long> changed = new HashSet<>();
    try (PreparedStatement ps = c.prepareStatement(RECLAIM_ALL)) {
      engine.setInstant(ps, 1, now);
      engine.setInstant(ps, 2, now);
      engine.setInstant(ps, 3, now);
      ps.setArray(4, c.createArrayOf("bigint", ids));
      ps.setArray(5, c.createArrayOf("bigint", tokens));
      ps.setArray(6, c.createArrayOf("text", statuses));
      ps.setArray(7, c.createArrayOf("text", reasons));
      engine.setInstant(ps, 8, now);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          changed.add(rs.getLong(1));
        }
      }
    }
    List<ExpiredLeases.Expired> reclaimed = new ArrayList<>(changed.size());
    for (ExpiredLeases.Expired e : expired) {
      if (changed.remove(e.id())) { // else renewed, taken over or finalized since it was read
        reclaimed.add(e);
      }
    }
    return reclaimed;
  }

  /** Inserts checkpoints of one kind in one statement, all at {@code now}. */
  void insertCheckpoints(Connection c, String kind, List<Checkpoints.Entry> entries, Instant now)
      throws SQLException {
    int n = entries.size();
    Long[] ids = new Long[n];
    String[] holders = new String[n];
    Long[] tokens = new Long[n];
    Integer[] counts = new Integer[n];
    Long[] heartbeats = new Long[n];
    String[] reasons = new String[n];
    for (int i = 0; i < n; i++) {
      Checkpoints.Entry e = entries.get(i);
      ids[i] = e.itemId();
      holders[i] = e.holder();
      tokens[i] = e.token();
      counts[i] = e.deliveryCount();
      heartbeats[i] = e.heartbeatAt() == null ? null : e.heartbeatAt().toEpochMilli();
      reasons[i] = e.reason();
    }
    try (PreparedStatement cp = c.prepareStatement(CHECKPOINT_ALL)) {
      cp.setString(1, kind);
      engine.setInstant(cp, 2, now);
      cp.setArray(3, c.createArrayOf("bigint", ids));
      cp.setArray(4, c.createArrayOf("text", holders));
      cp.setArray(5, c.createArrayOf("bigint", tokens));
      cp.setArray(6, c.createArrayOf("int4", counts));
      cp.setArray(7, c.createArrayOf("bigint", heartbeats));
      cp.setArray(8, c.createArrayOf("text", reasons));
      cp.setBoolean(9, Checkpoints.keepsOutput(kind));
      cp.executeUpdate();
    }
  }
}
