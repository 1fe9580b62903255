package dev.tether.cli.internal;

import dev.tether.jdbc.StoreUnavailableException;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreException;
import dev.tether.jdbc.internal.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Read-only monitoring queries over the {@code work_items} table (the seed's monitoring queries),
 * and the one bulk delete of {@code purge}. Stateless; each call borrows one connection.
 */
public final class Queries {
  private Queries() {}

  /** One row of a listing. */
  public record Row(
      long id,
      String queue,
      String status,
      int priority,
      int deliveryCount,
      int maxAttempts,
      String leaseHolder,
      Instant leaseExpiresAt,
      Instant heartbeatAt,
      Instant availableAt,
      Instant createdAt,
      Instant completedAt,
      String errorMessage,
      String input) {}

  /** Counts of one queue by status. */
  public record QueueCounts(String queue, long pending, long inProgress, long completed, long failed) {}

  /**
   * Lists items, newest first.
   *
   * @param store the store
   * @param queue the queue, or null for all
   * @param status the status db value, or null for all
   * @param limit at most this many
   * @return the rows
   */
  public static List<Row> list(TetherStore store, String queue, String status, int limit) {
    StringBuilder sql =
        new StringBuilder(
            "SELECT id, queue, status, priority, delivery_count, max_attempts, lease_holder,"
                + " lease_expires_at, heartbeat_at, available_at, created_at, completed_at,"
                + " error_message, input_data FROM work_items WHERE 1 = 1");
    if (queue != null) {
      sql.append(" AND queue = ?");
    }
    if (status != null) {
      sql.append(" AND status = ?");
    }
    sql.append(" ORDER BY id DESC LIMIT ?");
    return query(
        store,
        "listing items",
        (c, d) -> {
          try (PreparedStatement ps = c.prepareStatement(sql.toString())) {
            int i = 1;
            if (queue != null) {
              ps.setString(i++, queue);
            }
            if (status != null) {
              ps.setString(i++, status);
            }
            ps.setInt(i, limit);
            List<Row> rows = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                rows.add(row(rs, d));
              }
            }
            return rows;
          }
        });
  }

  /**
   * Lists in-progress items, soonest lease expiry first.
   *
   * @param store the store
   * @return the rows
   */
  public static List<Row> inFlight(TetherStore store) {
    return query(
        store,
        "listing in-flight items",
        (c, d) -> {
          try (PreparedStatement ps =
              c.prepareStatement(
                  "SELECT id, queue, status, priority, delivery_count, max_attempts, lease_holder,"
                      + " lease_expires_at, heartbeat_at, available_at, created_at, completed_at,"
                      + " error_message, input_data FROM work_items WHERE status = 'in_progress'"
                      + " ORDER BY lease_expires_at LIMIT 500")) {
            List<Row> rows = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                rows.add(row(rs, d));
              }
            }
            return rows;
          }
        });
  }

  private static Row row(ResultSet rs, Dialect d) throws SQLException {
    byte[] in = rs.getBytes("input_data");
    return new Row(
        rs.getLong("id"),
        rs.getString("queue"),
        rs.getString("status"),
        rs.getInt("priority"),
        rs.getInt("delivery_count"),
        rs.getInt("max_attempts"),
        rs.getString("lease_holder"),
        d.getInstant(rs, "lease_expires_at"),
        d.getInstant(rs, "heartbeat_at"),
        d.getInstant(rs, "available_at"),
        d.getInstant(rs, "created_at"),
        d.getInstant(rs, "completed_at"),
        rs.getString("error_message"),
        in == null ? null : TailBuffer.decode(in));
  }

  /**
   * Counts items by queue and status.
   *
   * @param store the store
   * @return the counts per queue, by queue name
   */
  public static List<QueueCounts> counts(TetherStore store) {
    return query(
        store,
        "counting items",
        (c, d) -> {
          Map<String, long[]> by = new TreeMap<>();
          try (PreparedStatement ps =
                  c.prepareStatement(
                      "SELECT queue, status, COUNT(*) FROM work_items GROUP BY queue, status");
              ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              long[] a = by.computeIfAbsent(rs.getString(1), k -> new long[4]);
              switch (rs.getString(2)) {
                case "pending":
                  a[0] += rs.getLong(3);
                  break;
                case "in_progress":
                  a[1] += rs.getLong(3);
                  break;
                case "completed":
                  a[2] += rs.getLong(3);
                  break;
                default:
                  a[3] += rs.getLong(3);
                  break;
              }
            }
          }
          List<QueueCounts> out = new ArrayList<>();
          by.forEach((q, a) -> out.add(new QueueCounts(q, a[0], a[1], a[2], a[3])));
          return out;
        });
  }

  /**
   * Returns how many items needed how many deliveries, over finished items.
   *
   * @param store the store
   * @return delivery count to number of items, ascending
   */
  public static Map<Integer, Long> retryDistribution(TetherStore store) {
    return query(
        store,
        "reading the retry distribution",
        (c, d) -> {
          Map<Integer, Long> out = new LinkedHashMap<>();
          try (PreparedStatement ps =
                  c.prepareStatement(
                      "SELECT delivery_count, COUNT(*) FROM work_items WHERE status IN"
                          + " ('completed', 'failed') GROUP BY delivery_count ORDER BY"
                          + " delivery_count");
              ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              out.put(rs.getInt(1), rs.getLong(2));
            }
          }
          return out;
        });
  }

  /**
   * Counts pending items of one queue.
   *
   * @param store the store
   * @param queue the queue
   * @return the count
   */
  public static long countPending(TetherStore store, String queue) {
    return query(
        store,
        "counting pending items",
        (c, d) -> {
          try (PreparedStatement ps =
              c.prepareStatement(
                  "SELECT COUNT(*) FROM work_items WHERE queue = ? AND status = 'pending'")) {
            ps.setString(1, queue);
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              return rs.getLong(1);
            }
          }
        });
  }

  /**
   * Counts checkpoints by kind (redeliveries are {@code lease_expired}, dead letters {@code
   * dead_lettered} plus failures past their attempts).
   *
   * @param store the store
   * @return kind to count
   */
  public static Map<String, Long> checkpointCounts(TetherStore store) {
    return query(
        store,
        "counting checkpoints",
        (c, d) -> {
          Map<String, Long> out = new TreeMap<>();
          try (PreparedStatement ps =
                  c.prepareStatement(
                      "SELECT kind, COUNT(*) FROM work_item_checkpoints GROUP BY kind");
              ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              out.put(rs.getString(1), rs.getLong(2));
            }
          }
          return out;
        });
  }

  /**
   * Deletes completed items finished before {@code cutoff}, with their checkpoints.
   *
   * @param store the store
   * @param cutoff the instant
   * @return items deleted
   */
  public static int purgeCompletedBefore(TetherStore store, Instant cutoff) {
    return query(
        store,
        "purging completed items",
        (c, d) -> {
          boolean auto = c.getAutoCommit();
          c.setAutoCommit(false);
          try {
            try (PreparedStatement ps =
                c.prepareStatement(
                    "DELETE FROM work_item_checkpoints WHERE item_id IN (SELECT id FROM"
                        + " work_items WHERE status = 'completed' AND completed_at < ?)")) {
              d.setInstant(ps, 1, cutoff);
              ps.executeUpdate();
            }
            int n;
            try (PreparedStatement ps =
                c.prepareStatement(
                    "DELETE FROM work_items WHERE status = 'completed' AND completed_at < ?")) {
              d.setInstant(ps, 1, cutoff);
              n = ps.executeUpdate();
            }
            c.commit();
            return n;
          } catch (SQLException | RuntimeException e) {
            c.rollback();
            throw e;
          } finally {
            c.setAutoCommit(auto);
          }
        });
  }

  /**
   * Cancels a pending or in-progress item: it becomes {@code failed} with {@code reason} and a
   * {@code cancelled} checkpoint. A worker holding it loses its lease at its next extension.
   *
   * @param store the store
   * @param id the item
   * @param reason the error message to record
   * @return true if the item was pending or in progress and is now failed
   */
  public static boolean cancel(TetherStore store, long id, String reason) {
    return query(
        store,
        "cancelling item " + id,
        (c, d) -> {
          boolean auto = c.getAutoCommit();
          c.setAutoCommit(false);
          try {
            Instant now = Dialect.truncate(Instant.now());
            int n;
            try (PreparedStatement ps =
                c.prepareStatement(
                    "UPDATE work_items SET status = 'failed', lease_token = NULL,"
                        + " lease_expires_at = NULL, error_message = ?, completed_at = ?,"
                        + " updated_at = ? WHERE id = ? AND status IN ('pending', 'in_progress')")) {
              ps.setString(1, reason);
              d.setInstant(ps, 2, now);
              d.setInstant(ps, 3, now);
              ps.setLong(4, id);
              n = ps.executeUpdate();
            }
            if (n == 1) {
              try (PreparedStatement ps =
                  c.prepareStatement(
                      "INSERT INTO work_item_checkpoints (item_id, kind, lease_holder, lease_token,"
                          + " delivery_count, heartbeat_at, reason, created_at) SELECT id,"
                          + " 'cancelled', lease_holder, NULL, delivery_count, heartbeat_at, ?, ?"
                          + " FROM work_items WHERE id = ?")) {
                ps.setString(1, reason);
                d.setInstant(ps, 2, now);
                ps.setLong(3, id);
                ps.executeUpdate();
              }
            }
            c.commit();
            return n == 1;
          } catch (SQLException | RuntimeException e) {
            c.rollback();
            throw e;
          } finally {
            c.setAutoCommit(auto);
          }
        });
  }

  /** Work on a connection. */
  @FunctionalInterface
  private interface Work<T> {
    T run(Connection c, Dialect d) throws SQLException;
  }

  private static <T> T query(TetherStore store, String what, Work<T> work) {
    Dialect d = store.engine() == TetherStore.Engine.POSTGRESQL ? Dialect.POSTGRES : Dialect.SQLITE;
    try (Connection c = store.dataSource().getConnection()) {
      return work.run(c, d);
    } catch (SQLException e) {
      String m = e.getMessage();
      if (m != null && (m.contains("SQLITE_BUSY") || m.contains("Connection"))) {
        throw new StoreUnavailableException(what + " failed: " + m, e);
      }
      throw new TetherStoreException(what + " failed: " + m, e);
    }
  }
}
