package dev.tether.jdbc;

import static dev.tether.jdbc.OverviewQueries.statusTerm;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The read-only SQL of {@link QueueMonitor}: counts by status and by checkpoint kind, in-flight
 * and stale leases, the retry distribution, item listings. Methods run on the caller's connection
 * in auto-commit. Stateless apart from its collaborators, so thread-safe.
 */
final class MonitorQueries {
  /**
   * The columns a listing reads: all of them but the progress checkpoint's bytes and the output
   * tails (read by {@link ItemReads#find} for one item; a listing shows when and by which
   * delivery they were written).
   */
  private static final String ITEM_COLUMNS =
      "id, queue, task_id, work_type, status, priority, lease_holder, lease_token,"
          + " lease_acquired_at, lease_expires_at, heartbeat_at, delivery_count, attempts, max_attempts,"
          + " available_at, idempotency_key, reply_to, input_data, output_data, error_message,"
          + " created_at, started_at, completed_at, updated_at, NULL AS progress, progress_at,"
          + " progress_delivery, reply_of, reply_error, NULL AS stdout_tail, NULL AS stderr_tail,"
          + " output_at, output_delivery";

  private final StoreEngine engine;
  private final ItemReads rows; // its row mapping, so a WorkItem is read one way

  MonitorQueries(StoreEngine engine, ItemReads rows) {
    this.engine = engine;
    this.rows = rows;
  }

  /**
   * Every queue's count of each status: one branch per family of indexes (schema 9), so that
   * SQLite counts each from an index rather than from the table.
   */
  static final String COUNTS_BY_STATUS =
      "SELECT queue, status, COUNT(*) FROM tether_work_items WHERE status <> 'in_progress' GROUP BY queue, status"
          + " UNION ALL SELECT queue, status, COUNT(*) FROM tether_work_items WHERE status = 'in_progress'"
          + " GROUP BY queue, status ORDER BY 1, 2";

  /** A queue's failed items, oldest first. Parameters: queue, limit. */
  static final String FAILED =
      "SELECT * FROM tether_work_items WHERE queue = ? AND " + statusTerm(WorkStatus.FAILED)
          + " ORDER BY completed_at, id LIMIT ?";

  /** How many items each queue holds in each status, ordered by queue then status. */
  List<QueueCount> countsByStatus(Connection c) throws SQLException {
    List<QueueCount> out = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(COUNTS_BY_STATUS); ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        out.add(new QueueCount(rs.getString(1), WorkStatus.fromDb(rs.getString(2)), rs.getLong(3)));
      }
    }
    return out;
  }

  /**
   * The in-flight leases of {@code queue} (null: every queue), soonest expiry first; or, with
   * {@code staleAfter}, those whose last heartbeat is older than that at {@code now}, oldest
   * heartbeat first.
   */
  List<LeaseInfo> leases(Connection c, String queue, Duration staleAfter, Instant now) throws SQLException {
    String sql = "SELECT id, queue, lease_holder, lease_token, delivery_count, lease_acquired_at,"
        + " heartbeat_at, lease_expires_at FROM tether_work_items WHERE status = 'in_progress'"
        + (queue != null ? " AND queue = ?" : "")
        + (staleAfter != null ? " AND heartbeat_at < ? ORDER BY heartbeat_at" : " ORDER BY lease_expires_at");
    List<LeaseInfo> out = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      int i = 1;
      if (queue != null) {
        ps.setString(i++, queue);
      }
      if (staleAfter != null) {
        engine.setInstant(ps, i, now.minus(staleAfter));
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          Instant hb = engine.getInstant(rs, "heartbeat_at");
          Instant exp = engine.getInstant(rs, "lease_expires_at");
          out.add(new LeaseInfo(rs.getLong("id"), rs.getString("queue"), rs.getString("lease_holder"),
              rs.getLong("lease_token"), rs.getInt("delivery_count"), engine.getInstant(rs, "lease_acquired_at"),
              hb, exp, hb == null ? null : Duration.between(hb, now),
              exp == null ? null : Duration.between(now, exp)));
        }
      }
    }
    return out;
  }

  /**
   * {@link #retryDistribution}'s statement, with the {@code (queue, status, id)} index's condition
   * word for word (SQLite). Parameter: the queue when {@code byQueue}.
   */
  static String retryDistributionSql(boolean byQueue) {
    return "SELECT delivery_count, COUNT(*) FROM tether_work_items WHERE status IN ('completed', 'failed')"
        + " AND status <> 'in_progress'" + (byQueue ? " AND queue = ?" : "") + " GROUP BY delivery_count";
  }

  /** How many finished items of {@code queue} (null: every queue) took each number of deliveries. */
  SortedMap<Integer, Long> retryDistribution(Connection c, String queue) throws SQLException {
    SortedMap<Integer, Long> out = new TreeMap<>();
    try (PreparedStatement ps = c.prepareStatement(retryDistributionSql(queue != null))) {
      if (queue != null) {
        ps.setString(1, queue);
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.put(rs.getInt(1), rs.getLong(2));
        }
      }
    }
    return out;
  }

  /** Up to {@code limit} failed items of {@code queue}, oldest first, without checkpoints. */
  List<WorkItem> failed(Connection c, String queue, int limit) throws SQLException {
    List<WorkItem> out = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(FAILED)) {
      ps.setString(1, queue);
      ps.setInt(2, limit);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rows.map(rs, List.of()));
        }
      }
    }
    return out;
  }

  /** Items as {@code q} says (filters, order, limit), without checkpoints. */
  List<WorkItem> items(Connection c, ItemQuery q) throws SQLException {
    if (q.queue() != null && q.status() == null && q.order() == ItemQuery.Order.NEWEST_FIRST) {
      return queueNewestFirst(c, q);
    }
    StringBuilder sql = new StringBuilder("SELECT ").append(ITEM_COLUMNS).append(" FROM tether_work_items");
    List<String> where = new ArrayList<>(2);
    if (q.queue() != null) {
      where.add("queue = ?");
    }
    if (q.status() != null) {
      // a literal with the partial index's condition, as the dashboard's listings (OverviewQueries)
      where.add(statusTerm(q.status()));
    } else if (q.queue() != null) {
      // every status, as two conditions each of which an index of the queue's rows holds
      where.add("(status <> 'in_progress' OR status = 'in_progress')");
    }
    if (!where.isEmpty()) {
      sql.append(" WHERE ").append(String.join(" AND ", where));
    }
    switch (q.order()) {
      case NEWEST_FIRST:
        // in progress: from the leased indexes, sorted (OverviewQueries.window says why +id)
        sql.append(q.status() == WorkStatus.IN_PROGRESS ? " ORDER BY +id DESC" : " ORDER BY id DESC");
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
      ps.setInt(i, q.limit());
      return list(ps);
    }
  }

  /**
   * A queue's newest items of every status: the newest of each status from its index (the
   * leased rows sorted), merged, as the dashboard's pages ({@link OverviewQueries#newestOfEachStatus}).
   */
  private List<WorkItem> queueNewestFirst(Connection c, ItemQuery q) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(queueNewestFirstSql())) {
      int i = 1;
      for (int alias = 0; alias < STATUSES.length; alias++) {
        ps.setString(i++, q.queue());
        ps.setInt(i++, q.limit());
      }
      ps.setInt(i, q.limit());
      return list(ps);
    }
  }

  /** {@link #queueNewestFirst}'s statement. Parameters: (queue, limit) per status, then the limit. */
  static String queueNewestFirstSql() {
    return OverviewQueries.newestOfEachStatus(ITEM_COLUMNS, false);
  }

  private static final WorkStatus[] STATUSES = WorkStatus.values();

  private List<WorkItem> list(PreparedStatement ps) throws SQLException {
    List<WorkItem> out = new ArrayList<>();
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        out.add(rows.map(rs, List.of()));
      }
    }
    return out;
  }

  /** How many items of {@code queue} are pending, due or not. */
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

  /** How many checkpoints of each kind the store holds, ordered by kind. */
  SortedMap<String, Long> checkpointCounts(Connection c) throws SQLException {
    SortedMap<String, Long> out = new TreeMap<>();
    try (PreparedStatement ps =
            c.prepareStatement("SELECT kind, COUNT(*) FROM tether_work_item_checkpoints GROUP BY kind");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        out.put(rs.getString(1), rs.getLong(2));
      }
    }
    return out;
  }
}
