package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * Expiry is redelivery: finds leases that expired and reclaims them, each into a retry ({@code
 * pending}) or, when the expired delivery was the item's last charged attempt, a failure (with an
 * error reply to its requester, if it has one), with one {@code lease_expired} checkpoint each.
 * Shared by {@link RecoverySweep} and the full acquisition ({@link Acquisitions}), so both reach
 * the same outcome for the same item. Methods run on the caller's connection inside the caller's
 * transaction. Stateless apart from the engine and the statement source, so thread-safe.
 */
final class ExpiredLeases {
  /**
   * An expired lease as read by {@link #findExpired} or a pick.
   *
   * @param id the item
   * @param holder the lease holder
   * @param token the lease token
   * @param deliveryCount the item's deliveries, this one included
   * @param attempts the item's charged attempts, this delivery included (expiry is charged)
   * @param maxAttempts the item's budget
   * @param replyTo the item's reply-to queue, or null
   * @param heartbeatAt the lease's last heartbeat
   * @param expiresAt when the lease expired
   */
  record Expired(
      long id,
      String holder,
      long token,
      int deliveryCount,
      int attempts,
      int maxAttempts,
      Instant heartbeatAt,
      Instant expiresAt,
      String replyTo) {

    /** Whether this delivery was the item's last charged attempt: reclaiming it fails the item. */
    boolean isLast() {
      return attempts >= maxAttempts;
    }

    /** The item's error message once reclaimed. */
    String reason() {
      return "lease of " + holder + " (token " + token + ") expired at " + expiresAt
          + " on attempt " + attempts + " of " + maxAttempts + " (delivery " + deliveryCount
          + "), last heartbeat " + heartbeatAt
          + (isLast() ? "; no attempts left, failed" : "; requeued");
    }

    /** The checkpoint of its reclaim. */
    Checkpoints.Entry checkpoint() {
      return new Checkpoints.Entry(id, holder, token, deliveryCount, heartbeatAt,
          "lease expired at " + expiresAt + " on attempt " + attempts + " of " + maxAttempts
              + (isLast() ? "; no attempts left: failed" : "; requeued"));
    }
  }

  /** Counts of one reclaim pass. */
  record ReclaimResult(int found, int recovered, int failed, int checkpoints) {}

  private final StoreEngine engine;
  private final Statements statements;
  private final Replies replies;

  ExpiredLeases(StoreEngine engine, Statements statements, Replies replies) {
    this.engine = engine;
    this.statements = statements;
    this.replies = replies;
  }

  /**
   * The expired leases, earliest expiry first, of one queue or (for the sweep) of all, optionally
   * only those on their last charged attempt. Parameters: the queue when by queue, now, n.
   */
  static String findExpiredSql(boolean byQueue, boolean lastDeliveryOnly) {
    return "SELECT id, lease_holder, lease_token, delivery_count, attempts, max_attempts,"
        + " heartbeat_at, lease_expires_at, reply_to FROM tether_work_items WHERE status = 'in_progress'"
        + (byQueue ? " AND queue = ?" : "")
        + (lastDeliveryOnly ? " AND attempts >= max_attempts" : "")
        + " AND lease_expires_at <= ? ORDER BY lease_expires_at LIMIT ?";
  }

  /**
   * Up to {@code limit} leases expired at {@code now}, earliest first, of {@code queue} (null:
   * every queue), optionally only those on their last delivery. Reads without locking: {@link
   * #reclaim} checks each again.
   */
  List<Expired> findExpired(
      Connection c, String queue, Instant now, int limit, boolean lastDeliveryOnly)
      throws SQLException {
    List<Expired> out = new ArrayList<>();
    try (StatementCache.Stmt st = statements.prepare(c, findExpiredSql(queue != null, lastDeliveryOnly))) {
      PreparedStatement ps = st.ps();
      int i = 1;
      if (queue != null) {
        ps.setString(i++, queue);
      }
      engine.setInstant(ps, i++, now);
      ps.setInt(i, limit);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(read(rs, rs.getLong("id")));
        }
      }
    }
    return out;
  }

  /** The expired lease of the current row (columns as {@link #findExpiredSql} names them). */
  Expired read(ResultSet rs, long id) throws SQLException {
    return new Expired(
        id,
        rs.getString("lease_holder"),
        rs.getLong("lease_token"),
        rs.getInt("delivery_count"),
        rs.getInt("attempts"),
        rs.getInt("max_attempts"),
        engine.getInstant(rs, "heartbeat_at"),
        engine.getInstant(rs, "lease_expires_at"),
        rs.getString("reply_to"));
  }

  /**
   * Turns expired leases into retries (or failures past the budget), each by a conditional
   * update that only matches if the lease is still the one that was read and still expired at
   * {@code now}: a renewal or takeover that landed in between makes it match nothing, and that
   * lease is neither reclaimed nor counted. One checkpoint per reclaimed lease.
   */
  ReclaimResult reclaim(Connection c, List<Expired> expired, Instant now) throws SQLException {
    if (expired.isEmpty()) {
      return new ReclaimResult(0, 0, 0, 0);
    }
    List<Expired> reclaimed = engine.reclaimRows(c, expired, now);
    int failed = 0;
    List<Checkpoints.Entry> checkpoints = new ArrayList<>(reclaimed.size());
    for (Expired e : reclaimed) {
      if (e.isLast()) {
        failed++;
        replies.answerWithError(c, e.id(), e.replyTo(), e.reason(), e.attempts(), false, now);
      }
      checkpoints.add(e.checkpoint());
    }
    if (!checkpoints.isEmpty()) {
      engine.insertCheckpoints(c, Checkpoint.LEASE_EXPIRED, checkpoints, now);
    }
    return new ReclaimResult(expired.size(), reclaimed.size() - failed, failed, checkpoints.size());
  }
}
