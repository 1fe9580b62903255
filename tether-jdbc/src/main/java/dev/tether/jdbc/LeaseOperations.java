package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;

/**
 * What a lease holder does to its item, one lease at a time: renew, complete, touch (a reply),
 * release as failed, hand back, dead-letter. Every change is a conditional update on (id, token,
 * status); when it matches no row, {@link LeaseDiagnosis} says why and that exception is thrown,
 * and nothing changed. Methods run on the caller's connection inside the caller's transaction.
 * Stateless apart from its collaborators, so thread-safe.
 */
final class LeaseOperations {
  static final String COMPLETE =
      "UPDATE work_items SET status = 'completed', output_data = ?, lease_expires_at = NULL,"
          + " error_message = NULL, completed_at = ?, updated_at = ?"
          + " WHERE id = ? AND lease_token = ? AND status = 'in_progress'";

  /** Backoff before a failed item is retried. */
  @FunctionalInterface
  interface RetryBackoff {
    Duration after(int deliveryCount);
  }

  /** The row of a held lease, read (and locked where the engine locks rows) before a multi-step change. */
  record Held(long id, long token, String holder, int deliveryCount, int maxAttempts, Instant heartbeatAt) {}

  private final StoreEngine engine;
  private final LeaseDiagnosis diagnosis;
  private final Checkpoints checkpoints;

  LeaseOperations(StoreEngine engine, LeaseDiagnosis diagnosis, Checkpoints checkpoints) {
    this.engine = engine;
    this.diagnosis = diagnosis;
    this.checkpoints = checkpoints;
  }

  /** Renews a lease to {@code max(current expiry, now + duration)}; returns the new expiry. */
  Instant renew(Connection c, long id, long token, Instant now, Duration duration) throws SQLException {
    Instant target = now.plus(duration);
    try (PreparedStatement ps = c.prepareStatement(
        "UPDATE work_items SET lease_expires_at = CASE WHEN lease_expires_at > ? THEN"
            + " lease_expires_at ELSE ? END, heartbeat_at = ?, updated_at = ?"
            + " WHERE id = ? AND lease_token = ? AND status = 'in_progress'")) {
      engine.setInstant(ps, 1, target);
      engine.setInstant(ps, 2, target);
      engine.setInstant(ps, 3, now);
      engine.setInstant(ps, 4, now);
      ps.setLong(5, id);
      ps.setLong(6, token);
      if (ps.executeUpdate() != 1) {
        throw diagnosis.diagnose(c, id, token, "renew");
      }
    }
    try (PreparedStatement ps = c.prepareStatement("SELECT lease_expires_at FROM work_items WHERE id = ?")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return engine.getInstant(rs, "lease_expires_at");
      }
    }
  }

  /** Completes a held item with its output. */
  void complete(Connection c, long id, long token, byte[] output, Instant now) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(COMPLETE)) {
      engine.setBytes(ps, 1, output);
      engine.setInstant(ps, 2, now);
      engine.setInstant(ps, 3, now);
      ps.setLong(4, id);
      ps.setLong(5, token);
      if (ps.executeUpdate() != 1) {
        throw diagnosis.diagnose(c, id, token, "complete");
      }
    }
  }

  /** Checks that the lease is held (and records the activity) before a reply is written. */
  void touchHeld(Connection c, long id, long token, Instant now) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "UPDATE work_items SET updated_at = ? WHERE id = ? AND lease_token = ? AND status = 'in_progress'")) {
      engine.setInstant(ps, 1, now);
      ps.setLong(2, id);
      ps.setLong(3, token);
      if (ps.executeUpdate() != 1) {
        throw diagnosis.diagnose(c, id, token, "reply");
      }
    }
  }

  /**
   * Releases a held item as failed: pending again after {@code backoff} while deliveries remain,
   * else {@code failed}; one {@code released_failed} checkpoint either way.
   */
  ReleaseOutcome fail(Connection c, long id, long token, String error, Instant now, RetryBackoff backoff)
      throws SQLException {
    Held h = lockHeld(c, id, token, "release as failed");
    String err = error == null ? "failed without an error message" : error;
    if (h.deliveryCount() < h.maxAttempts()) {
      Duration delay = backoff.after(h.deliveryCount());
      requeue(c, h, now.plus(delay), err, now);
      checkpoints.insert(c, Checkpoint.RELEASED_FAILED, entry(h, err + " (delivery " + h.deliveryCount()
          + " of " + h.maxAttempts() + "; retry after " + delay + ")"), now);
      return ReleaseOutcome.RETRY_SCHEDULED;
    }
    markFailed(c, h, err, now);
    checkpoints.insert(c, Checkpoint.RELEASED_FAILED, entry(h, err + " (delivery " + h.deliveryCount()
        + " of " + h.maxAttempts() + "; no attempts left: failed)"), now);
    return ReleaseOutcome.FAILED;
  }

  /** Hands a held item back, pending again after {@code delay}, not charged; a {@code nacked} checkpoint. */
  void nack(Connection c, long id, long token, Duration delay, Instant now) throws SQLException {
    Held h = lockHeld(c, id, token, "hand back");
    requeue(c, h, now.plus(delay), null, now);
    checkpoints.insert(c, Checkpoint.NACKED, entry(h, "handed back, visible again after " + delay), now);
  }

  /** Fails a held item at once with {@code reason}; a {@code dead_lettered} checkpoint. */
  void deadLetter(Connection c, long id, long token, String reason, Instant now) throws SQLException {
    Held h = lockHeld(c, id, token, "dead-letter");
    String r = reason == null ? "dead-lettered" : reason;
    markFailed(c, h, r, now);
    checkpoints.insert(c, Checkpoint.DEAD_LETTERED, entry(h, r), now);
  }

  private static Checkpoints.Entry entry(Held h, String reason) {
    return new Checkpoints.Entry(h.id(), h.holder(), h.token(), h.deliveryCount(), h.heartbeatAt(), reason);
  }

  private Held lockHeld(Connection c, long id, long token, String operation) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "SELECT lease_holder, delivery_count, max_attempts, heartbeat_at FROM work_items"
            + " WHERE id = ? AND lease_token = ? AND status = 'in_progress'" + engine.forUpdate())) {
      ps.setLong(1, id);
      ps.setLong(2, token);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw diagnosis.diagnose(c, id, token, operation);
        }
        return new Held(id, token, rs.getString("lease_holder"), rs.getInt("delivery_count"),
            rs.getInt("max_attempts"), engine.getInstant(rs, "heartbeat_at"));
      }
    }
  }

  private void requeue(Connection c, Held h, Instant availableAt, String error, Instant now)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "UPDATE work_items SET status = 'pending', lease_holder = NULL, lease_token = NULL,"
            + " lease_expires_at = NULL, available_at = ?, error_message = COALESCE(?, error_message),"
            + " updated_at = ?, scheduled = ? WHERE id = ? AND lease_token = ? AND status = 'in_progress'")) {
      engine.setInstant(ps, 1, availableAt);
      ps.setString(2, error);
      engine.setInstant(ps, 3, now);
      ps.setBoolean(4, availableAt.isAfter(now));
      ps.setLong(5, h.id());
      ps.setLong(6, h.token());
      if (ps.executeUpdate() != 1) {
        throw diagnosis.diagnose(c, h.id(), h.token(), "requeue");
      }
    }
  }

  private void markFailed(Connection c, Held h, String error, Instant now) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "UPDATE work_items SET status = 'failed', lease_expires_at = NULL, error_message = ?,"
            + " completed_at = ?, updated_at = ? WHERE id = ? AND lease_token = ? AND status = 'in_progress'")) {
      ps.setString(1, error);
      engine.setInstant(ps, 2, now);
      engine.setInstant(ps, 3, now);
      ps.setLong(4, h.id());
      ps.setLong(5, h.token());
      if (ps.executeUpdate() != 1) {
        throw diagnosis.diagnose(c, h.id(), h.token(), "fail");
      }
    }
  }
}
