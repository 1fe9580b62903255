package dev.tether.jdbc;

import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The full acquisition, in the caller's write transaction: promotes due scheduled items, fails
 * expired leases that were their item's last charged attempt, then picks pending items and
 * expired leases with attempts left by priority and age and leases each with a new token,
 * charging the new delivery (a takeover for an expired lease, with its checkpoint). Every path that cannot take the engine's shorter
 * way ends here. Stateless apart from its collaborators, so thread-safe.
 */
final class Acquisitions {
  private static final Logger LOG = LoggerFactory.getLogger(Acquisitions.class);

  /** Expired leases of the queue an acquire reclaims before picking (so they keep their place). */
  static final int RECLAIM_ON_ACQUIRE = 500;

  /** Highest priority first, then oldest: the order every acquisition delivers in. */
  static final Comparator<Lease> DELIVERY_ORDER =
      Comparator.comparingInt((Lease x) -> -x.priority()).thenComparingLong(Lease::itemId);

  private static final SecureRandom TOKENS = new SecureRandom();

  private static final String TAKE_OVER =
      "UPDATE tether_work_items SET lease_holder = ?, lease_token = ?, lease_acquired_at = ?,"
          + " lease_expires_at = ?, heartbeat_at = ?, delivery_count = delivery_count + 1,"
          + " attempts = attempts + 1, updated_at = ? WHERE id = ? AND status = 'in_progress'"
          + " AND lease_token = ? AND lease_expires_at <= ?";

  private static final String CANDIDATE_COLUMNS =
      "SELECT id, queue, task_id, work_type, priority, delivery_count, attempts, max_attempts,"
          + " input_data, reply_to, created_at, lease_holder, lease_token, heartbeat_at,"
          + " lease_expires_at, progress, reply_of, reply_error, headers FROM tether_work_items WHERE queue = ?";

  private final StoreEngine engine;
  private final Statements statements;
  private final ExpiredLeases expiredLeases;
  private final Checkpoints checkpoints;

  Acquisitions(StoreEngine engine, Statements statements, ExpiredLeases expiredLeases, Checkpoints checkpoints) {
    this.engine = engine;
    this.statements = statements;
    this.expiredLeases = expiredLeases;
    this.checkpoints = checkpoints;
  }

  /** A new lease token: random, never 0. */
  static long newToken() {
    long t;
    do {
      t = TOKENS.nextLong();
    } while (t == 0);
    return t;
  }

  /**
   * The pick of the full acquisition: pending due unscheduled items, or in-progress items whose
   * lease expired with deliveries left, of one queue, highest priority then oldest; pending rows
   * locked as the engine locks picks. Parameters: queue, now, the work type and task id when
   * filtered, n.
   */
  static String candidatesSql(StoreEngine engine, boolean pending, boolean byWorkType, boolean byTaskId) {
    StringBuilder sql = new StringBuilder(CANDIDATE_COLUMNS);
    if (pending) {
      sql.append(" AND status = 'pending' AND scheduled = FALSE AND available_at <= ?");
    } else {
      sql.append(" AND status = 'in_progress' AND lease_expires_at <= ? AND attempts < max_attempts");
    }
    if (byWorkType) {
      sql.append(" AND work_type = ?");
    }
    if (byTaskId) {
      sql.append(" AND task_id = ?");
    }
    sql.append(" ORDER BY priority DESC, id LIMIT ?");
    if (pending) {
      sql.append(engine.skipLocked());
    }
    return sql.toString();
  }

  /**
   * Makes the queue's scheduled (delayed) pending items that are due at {@code now} ordinary
   * pending items, which the picks find in the ready index; returns how many ({@link
   * StoreEngine#promoteSql}).
   */
  int promoteDue(Connection c, String queue, Instant now) throws SQLException {
    try (StatementCache.Stmt st = statements.prepare(c, engine.promoteSql())) {
      PreparedStatement ps = st.ps();
      ps.setString(1, queue);
      engine.setInstant(ps, 2, now);
      return ps.executeUpdate();
    }
  }

  /** A row an acquire may deliver: pending and due, or in progress with an expired lease. */
  private record Candidate(Lease lease, ExpiredLeases.Expired expired) {}

  /**
   * Acquires up to {@code r.maxItems()} items for {@code holder} at {@code now}, highest priority
   * first, then oldest. An expired lease is only taken over if this acquisition delivers the
   * item, so the old token stays valid until the takeover.
   */
  List<Lease> acquire(Connection c, AcquireRequest r, String holder, Instant now) throws SQLException {
    boolean anyExpired = engine.mayHoldExpiredLeases(c, statements, r.queue(), now);
    // Delayed items that came due join the pending items the pick below sees.
    promoteDue(c, r.queue(), now);
    // Items whose expired delivery was their last are failed first (one checkpoint each).
    if (anyExpired) {
      expiredLeases.reclaim(c,
          expiredLeases.findExpired(c, r.queue(), now, RECLAIM_ON_ACQUIRE, true), now);
    }
    Instant expires = now.plus(r.leaseDuration());
    List<Candidate> candidates = new ArrayList<>(candidates(c, r, holder, now, expires, true));
    if (anyExpired) {
      candidates.addAll(candidates(c, r, holder, now, expires, false));
    }
    candidates.sort(Comparator.comparing(Candidate::lease, DELIVERY_ORDER));
    List<Lease> taken = new ArrayList<>(r.maxItems());
    // Pending candidates are taken together after the loop: they are locked by the pick or by
    // the engine's writer lock, so their updates cannot miss.
    List<Lease> pendingPicked = new ArrayList<>();
    try (StatementCache.Stmt takeOver = statements.prepare(c, TAKE_OVER)) {
      for (Candidate cand : candidates) {
        if (taken.size() + pendingPicked.size() == r.maxItems()) {
          break;
        }
        if (cand.expired() == null) {
          pendingPicked.add(cand.lease());
        } else if (takeOver(c, takeOver.ps(), cand, holder, now, expires)) {
          taken.add(cand.lease());
        } else {
          LOG.debug("Item {} was taken by another transaction between pick and update", cand.lease().itemId());
        }
      }
    }
    if (!pendingPicked.isEmpty()) {
      Set<Long> matched = engine.takePending(c, statements, pendingPicked, holder, now, expires);
      for (Lease l : pendingPicked) {
        if (matched.contains(l.itemId())) {
          taken.add(l);
        } else {
          LOG.debug("Item {} was taken by another transaction between pick and update", l.itemId());
        }
      }
      taken.sort(DELIVERY_ORDER);
    }
    return taken;
  }

  /** Takes over an expired lease, with its checkpoint; false if it changed since the pick. */
  private boolean takeOver(Connection c, PreparedStatement ps, Candidate cand, String holder,
      Instant now, Instant expires) throws SQLException {
    Lease l = cand.lease();
    ExpiredLeases.Expired e = cand.expired();
    ps.setString(1, holder);
    ps.setLong(2, l.token());
    engine.setInstant(ps, 3, now);
    engine.setInstant(ps, 4, expires);
    engine.setInstant(ps, 5, now);
    engine.setInstant(ps, 6, now);
    ps.setLong(7, l.itemId());
    ps.setLong(8, e.token());
    engine.setInstant(ps, 9, now);
    if (ps.executeUpdate() != 1) {
      return false;
    }
    checkpoints.insert(c, Checkpoint.LEASE_EXPIRED, new Checkpoints.Entry(e.id(), e.holder(), e.token(),
        e.deliveryCount(), e.heartbeatAt(), "lease expired at " + e.expiresAt() + " on attempt "
            + e.attempts() + " of " + e.maxAttempts() + "; redelivered to " + holder), now);
    return true;
  }

  private List<Candidate> candidates(
      Connection c, AcquireRequest r, String holder, Instant now, Instant expires, boolean pending)
      throws SQLException {
    String sql = candidatesSql(engine, pending, r.workType() != null, r.taskId() != null);
    List<Candidate> out = new ArrayList<>();
    try (StatementCache.Stmt st = statements.prepare(c, sql)) {
      PreparedStatement ps = st.ps();
      int i = 1;
      ps.setString(i++, r.queue());
      engine.setInstant(ps, i++, now);
      if (r.workType() != null) {
        ps.setString(i++, r.workType());
      }
      if (r.taskId() != null) {
        ps.setString(i++, r.taskId());
      }
      ps.setInt(i, r.maxItems());
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          long id = rs.getLong("id");
          Lease lease = new Lease(
              id,
              newToken(),
              holder,
              rs.getString("queue"),
              rs.getString("task_id"),
              rs.getString("work_type"),
              rs.getInt("priority"),
              rs.getInt("delivery_count") + 1,
              rs.getInt("attempts") + 1,
              rs.getInt("max_attempts"),
              now,
              expires,
              rs.getBytes("input_data"),
              rs.getString("reply_to"),
              engine.getInstant(rs, "created_at"),
              rs.getBytes("progress"),
              ItemReads.getLongOrNull(rs, "reply_of"),
              rs.getBoolean("reply_error"),
              rs.getString("headers"));
          out.add(new Candidate(lease, pending ? null : expiredLeases.read(rs, id)));
        }
      }
    }
    return out;
  }
}
