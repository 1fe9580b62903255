package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import dev.tether.mailbox.LeaseStatus;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * What a lease holder does to its item, one lease at a time: renew, complete, touch (a reply),
 * fail or nack (charged), hand back (not charged), dead-letter, checkpoint its progress, check
 * its lease. Every change is a conditional update on (id, token,
 * status); when it matches no row, {@link LeaseDiagnosis} says why and that exception is thrown,
 * and nothing changed. Methods run on the caller's connection inside the caller's transaction.
 * Stateless apart from its collaborators, so thread-safe.
 */
final class LeaseOperations {
  static final String COMPLETE =
      "UPDATE tether_work_items SET status = 'completed', output_data = ?, lease_expires_at = NULL,"
          + " error_message = NULL, completed_at = ?, updated_at = ?"
          + " WHERE id = ? AND lease_token = ? AND status = 'in_progress'";

  /**
   * A delivery's latest output on its item's row (see {@link #recordOutput}). Parameters: the two
   * tails, the instant of the last output (null: keep), twice the instant of the last beat (null:
   * keep; never before the lease was taken), id, token. Every parameter is compared with or
   * coalesced into a column, so PostgreSQL knows its type when it is null (a bare {@code ? IS
   * NULL} it could not type, and the statement failed for an unknown beat).
   */
  static final String RECORD_OUTPUT =
      "UPDATE tether_work_items SET stdout_tail = ?, stderr_tail = ?, output_at = COALESCE(?, output_at),"
          + " output_delivery = delivery_count, heartbeat_at = CASE WHEN ? < lease_acquired_at"
          + " THEN lease_acquired_at ELSE COALESCE(?, heartbeat_at) END"
          + " WHERE id = ? AND lease_token = ? AND status = 'in_progress'";

  /** Backoff before a failed item is retried. */
  @FunctionalInterface
  interface RetryBackoff {
    Duration after(int attempt);
  }

  /** The row of a held lease, read (and locked where the engine locks rows) before a multi-step change. */
  record Held(long id, long token, String holder, int deliveryCount, int attempts, int maxAttempts,
      Instant heartbeatAt, String replyTo, String queue) {}

  /** A nack's outcome and the item's queue (whose receivers a retry may wake). */
  record Nacked(ReleaseOutcome outcome, String queue) {}

  private final StoreEngine engine;
  private final LeaseDiagnosis diagnosis;
  private final Checkpoints checkpoints;
  private final Replies replies;

  LeaseOperations(StoreEngine engine, LeaseDiagnosis diagnosis, Checkpoints checkpoints, Replies replies) {
    this.engine = engine;
    this.diagnosis = diagnosis;
    this.checkpoints = checkpoints;
    this.replies = replies;
  }

  /** Renews a lease to {@code max(current expiry, now + duration)}; returns the new expiry. */
  Instant renew(Connection c, long id, long token, Instant now, Duration duration) throws SQLException {
    Instant target = now.plus(duration);
    updateHeld(c,
        "UPDATE tether_work_items SET lease_expires_at = CASE WHEN lease_expires_at > ? THEN"
            + " lease_expires_at ELSE ? END, heartbeat_at = ?, updated_at = ?"
            + " WHERE id = ? AND lease_token = ? AND status = 'in_progress'",
        id, token, "renew", ps -> {
          engine.setInstant(ps, 1, target);
          engine.setInstant(ps, 2, target);
          engine.setInstant(ps, 3, now);
          engine.setInstant(ps, 4, now);
          return 4;
        });
    try (PreparedStatement ps = c.prepareStatement("SELECT lease_expires_at FROM tether_work_items WHERE id = ?")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return engine.getInstant(rs, "lease_expires_at");
      }
    }
  }

  /**
   * Writes a held delivery's latest output tails on its item's row, with the instants of its last
   * output and last beat ({@code now} less their ages, never before the lease was acquired nor
   * after {@code now}); the checkpoint that ends the delivery copies them. Returns whether the
   * lease matched (when it did not, nothing changed and the caller's own update says why).
   */
  boolean recordOutput(Connection c, long id, long token, dev.tether.mailbox.OutputTail output,
      Instant now) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(RECORD_OUTPUT)) {
      bindOutput(engine, ps, id, token, output, now);
      return ps.executeUpdate() == 1;
    }
  }

  /** Binds the parameters of {@link #RECORD_OUTPUT}. */
  static void bindOutput(StoreEngine engine, PreparedStatement ps, long id, long token,
      dev.tether.mailbox.OutputTail output, Instant now) throws SQLException {
    ps.setString(1, output.stdout());
    ps.setString(2, output.stderr());
    engine.setInstant(ps, 3, output.sinceLastOutput() == null ? null : now.minus(output.sinceLastOutput()));
    Instant beat = output.sinceLastBeat() == null ? null : now.minus(output.sinceLastBeat());
    engine.setInstant(ps, 4, beat);
    engine.setInstant(ps, 5, beat);
    ps.setLong(6, id);
    ps.setLong(7, token);
  }

  /** Completes a held item with its output. */
  void complete(Connection c, long id, long token, byte[] output, Instant now) throws SQLException {
    updateHeld(c, COMPLETE, id, token, "complete", ps -> {
      engine.setBytes(ps, 1, output);
      engine.setInstant(ps, 2, now);
      engine.setInstant(ps, 3, now);
      return 3;
    });
  }

  /** Checks that the lease is held (and records the activity) before a reply is written. */
  void touchHeld(Connection c, long id, long token, Instant now) throws SQLException {
    updateHeld(c,
        "UPDATE tether_work_items SET updated_at = ? WHERE id = ? AND lease_token = ? AND status = 'in_progress'",
        id, token, "reply", ps -> {
          engine.setInstant(ps, 1, now);
          return 1;
        });
  }

  /**
   * Ends a held item's attempt as failed (charged; a release as failed): pending again after
   * {@code backoff} while attempts remain, else {@code failed} with an error reply to its
   * requester; one {@code released_failed} checkpoint either way.
   */
  ReleaseOutcome fail(Connection c, long id, long token, String error, Instant now, RetryBackoff backoff)
      throws SQLException {
    Held h = lockHeld(c, id, token, "release as failed");
    return failHeld(c, h, error, h.attempts() < h.maxAttempts() ? backoff.after(h.attempts()) : null, now);
  }

  /**
   * Ends a held item's attempt as failed (charged) with the caller's {@code delay} before it is
   * visible again, or dead-letters it when that was its last attempt.
   */
  Nacked nack(Connection c, long id, long token, Duration delay, String reason, Instant now)
      throws SQLException {
    Held h = lockHeld(c, id, token, "nack");
    return new Nacked(failHeld(c, h, reason, delay, now), h.queue());
  }

  private ReleaseOutcome failHeld(Connection c, Held h, String error, Duration delay, Instant now)
      throws SQLException {
    String err = error == null ? "failed without an error message" : error;
    if (h.attempts() < h.maxAttempts()) {
      requeue(c, h, now.plus(delay), err, now, false);
      checkpoints.insert(c, Checkpoint.RELEASED_FAILED, entry(h, err + " (attempt " + h.attempts()
          + " of " + h.maxAttempts() + "; retry after " + delay + ")"), now);
      return ReleaseOutcome.RETRY_SCHEDULED;
    }
    String reason = "failed on attempt " + h.attempts() + " of " + h.maxAttempts() + ": " + err;
    markFailed(c, h, reason, now);
    checkpoints.insert(c, Checkpoint.RELEASED_FAILED, entry(h, err + " (attempt " + h.attempts()
        + " of " + h.maxAttempts() + "; no attempts left: failed)"), now);
    replies.answerWithError(c, h.id(), h.replyTo(), reason, h.attempts(), false, now);
    return ReleaseOutcome.FAILED;
  }

  /**
   * Hands a held item back without charging its attempt (its worker is shutting down or
   * draining): pending again after {@code delay}, its progress checkpoint kept; a {@code
   * handed_back} checkpoint. Returns the item's queue.
   */
  String handBack(Connection c, long id, long token, Duration delay, Instant now) throws SQLException {
    Held h = lockHeld(c, id, token, "hand back");
    requeue(c, h, now.plus(delay), null, now, true);
    checkpoints.insert(c, Checkpoint.HANDED_BACK, entry(h, "handed back by its worker, attempt "
        + h.attempts() + " of " + h.maxAttempts() + " not charged; visible again "
        + (delay.isZero() ? "at once" : "after " + dev.tether.DurationText.of(delay))), now);
    return h.queue();
  }

  /** Fails a held item at once with {@code reason} (charged); a {@code dead_lettered} checkpoint. */
  void deadLetter(Connection c, long id, long token, String reason, Instant now) throws SQLException {
    Held h = lockHeld(c, id, token, "dead-letter");
    String r = reason == null ? "dead-lettered" : reason;
    markFailed(c, h, r, now);
    checkpoints.insert(c, Checkpoint.DEAD_LETTERED, entry(h, r), now);
    replies.answerWithError(c, h.id(), h.replyTo(), r, h.attempts(), false, now);
  }

  /**
   * Records a held item's progress checkpoint (replacing the previous one), fenced by the token;
   * also counts as its heartbeat.
   */
  void checkpoint(Connection c, long id, long token, byte[] progress, Instant now) throws SQLException {
    updateHeld(c,
        "UPDATE tether_work_items SET progress = ?, progress_at = ?, progress_delivery = delivery_count,"
            + " heartbeat_at = ?, beat_at = ?, updated_at = ?"
            + " WHERE id = ? AND lease_token = ? AND status = 'in_progress'",
        id, token, "checkpoint", ps -> {
          engine.setBytes(ps, 1, progress);
          engine.setInstant(ps, 2, now);
          engine.setInstant(ps, 3, now);
          engine.setInstant(ps, 4, now);
          engine.setInstant(ps, 5, now);
          return 5;
        });
  }

  /**
   * Records a beat of a held lease's work (its heartbeat and its work beat), fenced by the token;
   * does not extend the lease.
   */
  void beat(Connection c, long id, long token, Instant now) throws SQLException {
    updateHeld(c,
        "UPDATE tether_work_items SET heartbeat_at = ?, beat_at = ?, updated_at = ?"
            + " WHERE id = ? AND lease_token = ? AND status = 'in_progress'",
        id, token, "beat", ps -> {
          engine.setInstant(ps, 1, now);
          engine.setInstant(ps, 2, now);
          engine.setInstant(ps, 3, now);
          return 3;
        });
  }


  /**
   * Writes a {@code progress_taken_over} checkpoint when the lease's delivery starts from a
   * progress checkpoint an earlier delivery wrote; does nothing otherwise (no checkpoint, this
   * delivery's own, or the lease no longer held). Returns whether it wrote one.
   */
  boolean recordTakeover(Connection c, long id, long token, Instant now) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "SELECT lease_holder, delivery_count, heartbeat_at, progress_at, progress_delivery"
            + " FROM tether_work_items WHERE id = ? AND lease_token = ? AND status = 'in_progress'"
            + " AND progress IS NOT NULL AND progress_delivery < delivery_count")) {
      ps.setLong(1, id);
      ps.setLong(2, token);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return false;
        }
        int delivery = rs.getInt("delivery_count");
        int from = rs.getInt("progress_delivery");
        Instant at = engine.getInstant(rs, "progress_at");
        checkpoints.insert(c, Checkpoint.PROGRESS_TAKEN_OVER, new Checkpoints.Entry(id,
            rs.getString("lease_holder"), token, delivery, engine.getInstant(rs, "heartbeat_at"),
            "delivery " + delivery + " starts from the progress checkpoint written by delivery "
                + from + " at " + at), now);
        return true;
      }
    }
  }

  /**
   * What the store says of a lease at {@code now}: held, expired (its token still current), lost,
   * or cancelled. Reads one row; changes nothing.
   */
  LeaseStatus checkLease(Connection c, long id, long token, Instant now) throws SQLException {
    return inspectLease(c, id, token, now).status();
  }

  /** {@link #checkLease} with the lease's last work beat, when it is still this token's. */
  LeaseCheck inspectLease(Connection c, long id, long token, Instant now) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "SELECT status, lease_token, lease_expires_at, beat_at FROM tether_work_items WHERE id = ?")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return new LeaseCheck(LeaseStatus.LOST, null);
        }
        String status = rs.getString("status");
        if (WorkStatus.CANCELLED.dbValue().equals(status)) {
          return new LeaseCheck(LeaseStatus.CANCELLED, null);
        }
        Long current = ItemReads.getLongOrNull(rs, "lease_token");
        if (!WorkStatus.IN_PROGRESS.dbValue().equals(status) || current == null || current != token) {
          return new LeaseCheck(LeaseStatus.LOST, null);
        }
        Instant expires = engine.getInstant(rs, "lease_expires_at");
        return new LeaseCheck(
            expires != null && expires.isAfter(now) ? LeaseStatus.HELD : LeaseStatus.EXPIRED,
            engine.getInstant(rs, "beat_at"));
      }
    }
  }

  /** Watched items per statement of {@link #cancelledAmong} (its placeholders). */
  static final int CANCELLED_CHUNK = 16;

  /** Which of {@code ids} are cancelled: one primary-key statement per {@link #CANCELLED_CHUNK} ids. */
  List<Long> cancelledAmong(Connection c, List<Long> ids) throws SQLException {
    List<Long> out = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(
        "SELECT id FROM tether_work_items WHERE status = 'cancelled'"
            + " AND id IN (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
      for (int from = 0; from < ids.size(); from += CANCELLED_CHUNK) {
        for (int i = 0; i < CANCELLED_CHUNK; i++) {
          int k = from + i;
          ps.setLong(i + 1, k < ids.size() ? ids.get(k) : -1L); // -1: no item has that id
        }
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            out.add(rs.getLong(1));
          }
        }
      }
    }
    return out;
  }

  private static Checkpoints.Entry entry(Held h, String reason) {
    return new Checkpoints.Entry(h.id(), h.holder(), h.token(), h.deliveryCount(), h.heartbeatAt(), reason);
  }

  private Held lockHeld(Connection c, long id, long token, String operation) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "SELECT lease_holder, delivery_count, attempts, max_attempts, heartbeat_at, reply_to, queue"
            + " FROM tether_work_items WHERE id = ? AND lease_token = ? AND status = 'in_progress'"
            + engine.forUpdate())) {
      ps.setLong(1, id);
      ps.setLong(2, token);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw diagnosis.diagnose(c, id, token, operation);
        }
        return new Held(id, token, rs.getString("lease_holder"), rs.getInt("delivery_count"),
            rs.getInt("attempts"), rs.getInt("max_attempts"), engine.getInstant(rs, "heartbeat_at"),
            rs.getString("reply_to"), rs.getString("queue"));
      }
    }
  }

  /** Makes a held item pending again at {@code availableAt}, refunding its attempt if asked. */
  private void requeue(Connection c, Held h, Instant availableAt, String error, Instant now,
      boolean refund) throws SQLException {
    updateHeld(c,
        "UPDATE tether_work_items SET status = 'pending', lease_holder = NULL, lease_token = NULL,"
            + " lease_expires_at = NULL, available_at = ?, error_message = COALESCE(?, error_message),"
            + " updated_at = ?, scheduled = ?, attempts = attempts - ?"
            + " WHERE id = ? AND lease_token = ? AND status = 'in_progress'",
        h.id(), h.token(), "requeue", ps -> {
          engine.setInstant(ps, 1, availableAt);
          ps.setString(2, error);
          engine.setInstant(ps, 3, now);
          ps.setBoolean(4, availableAt.isAfter(now));
          ps.setInt(5, refund ? 1 : 0);
          return 5;
        });
  }

  private void markFailed(Connection c, Held h, String error, Instant now) throws SQLException {
    updateHeld(c,
        "UPDATE tether_work_items SET status = 'failed', lease_expires_at = NULL, error_message = ?,"
            + " completed_at = ?, updated_at = ? WHERE id = ? AND lease_token = ? AND status = 'in_progress'",
        h.id(), h.token(), "fail", ps -> {
          ps.setString(1, error);
          engine.setInstant(ps, 2, now);
          engine.setInstant(ps, 3, now);
          return 3;
        });
  }

  /** Binds an update's own parameters, from index 1; returns how many it bound. */
  @FunctionalInterface
  private interface Binder {
    int bind(PreparedStatement ps) throws SQLException;
  }

  /**
   * Runs an update fenced on the lease, whose text ends in {@code WHERE id = ? AND lease_token = ?
   * AND status = 'in_progress'}: binds its own parameters, then the id and the token; when it
   * matched no row (and so changed nothing), throws what {@link LeaseDiagnosis} says of {@code
   * operation}.
   */
  private void updateHeld(Connection c, String sql, long id, long token, String operation, Binder binder)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      int next = binder.bind(ps) + 1;
      ps.setLong(next, id);
      ps.setLong(next + 1, token);
      if (ps.executeUpdate() != 1) {
        throw diagnosis.diagnose(c, id, token, operation);
      }
    }
  }
}
