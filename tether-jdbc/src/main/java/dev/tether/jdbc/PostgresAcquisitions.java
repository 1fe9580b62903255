package dev.tether.jdbc;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * PostgreSQL's acquisitions in one auto-committed statement each: a worker's acquisition alone,
 * and a group's completions with its acquisitions from one queue (the group committer's fused
 * statement: one round trip, one commit, one WAL flush for all of them). Both check first whether
 * the queue needs the full acquisition (an expired lease or a due scheduled item); then they take
 * nothing and say so, and the caller runs {@link Acquisitions#acquire} instead. Both take "now" as
 * a parameter: null in production (the statement reads {@code clock_timestamp()} itself, once),
 * a test clock's instant otherwise, so that a test clock changes the instant but never which
 * statement runs. Stateless apart from the engine, so thread-safe.
 */
final class PostgresAcquisitions {
  /** Reads the instant once: the parameter, or when null the database clock. */
  private static final String NOW =
      "WITH t AS (SELECT COALESCE(?::timestamptz, date_trunc('milliseconds', clock_timestamp())) AS now),";

  /**
   * The common part of both statements, after {@link #NOW}: {@code x} says whether the queue
   * needs the full acquisition at {@code t.now}: it holds an expired lease, or a scheduled
   * (delayed) pending item that is due and not yet promoted. Each check reads the earliest
   * matching instant in index order rather than asking {@code EXISTS}: the planner costs {@code
   * EXISTS} as stopping at the first of many matches (for an instant it cannot see) and, with the
   * statistics of a busy queue, scanned the whole table for a row that was not there; an ordered
   * index read wins whatever the row estimate. The instant is a scalar subquery there so that the
   * checks are index range scans ({@code tether_work_items_leased_by_queue}, {@code
   * tether_work_items_scheduled}). {@code pick} locks up to n pending due unscheduled items, highest
   * priority then oldest, {@code SKIP LOCKED}, and none when {@code x} is true; {@code num}
   * numbers them in that order. Parameters: queue, queue, queue.
   *
   * <p>n is a literal of the statement text ({@link #pick}), not a parameter: for a parameter the
   * generic plan assumes a tenth of the queue's rows, so on a large queue PostgreSQL kept
   * choosing custom plans and planned the statement at every execution. One statement text (and
   * one prepared statement per connection) per n; sizes are few.
   */
  private static final String PICK_HEAD =
      " x AS (SELECT (SELECT e.lease_expires_at FROM tether_work_items e WHERE e.queue = ?"
          + " AND e.status = 'in_progress' AND e.lease_expires_at <= (SELECT now FROM t)"
          + " ORDER BY e.lease_expires_at LIMIT 1) IS NOT NULL"
          + " OR COALESCE((SELECT s.available_at FROM tether_work_items s WHERE s.queue = ?"
          + " AND s.status = 'pending' AND s.scheduled = TRUE ORDER BY s.available_at LIMIT 1)"
          + " <= (SELECT now FROM t), FALSE) AS expired),"
          + " pick AS (SELECT w.id, w.priority FROM tether_work_items w, t WHERE w.queue = ? AND w.status = 'pending'"
          + " AND w.scheduled = FALSE AND w.available_at <= t.now AND NOT (SELECT expired FROM x)"
          + " ORDER BY w.priority DESC, w.id";

  private static final String PICK_TAIL =
      " FOR UPDATE OF w SKIP LOCKED),"
          + " num AS (SELECT id, row_number() OVER (ORDER BY priority DESC, id) AS n FROM pick),";

  /**
   * The acquisition alone: leases each picked row with its own token from the array (in pick
   * order). Parameters: now (null: the database clock), queue, queue, queue, holder, lease
   * millis, tokens.
   */
  private static final String ACQUIRE_TAIL =
      " upd AS (UPDATE tether_work_items w SET status = 'in_progress', lease_holder = ?, lease_token = k.token,"
          + " lease_acquired_at = t.now, lease_expires_at = t.now + ?::bigint * interval '1 millisecond',"
          + " heartbeat_at = t.now, delivery_count = w.delivery_count + 1, attempts = w.attempts + 1,"
          + " started_at = COALESCE(w.started_at, t.now), updated_at = t.now"
          + " FROM num JOIN unnest(?::bigint[]) WITH ORDINALITY AS k(token, n) ON k.n = num.n, t"
          + " WHERE w.id = num.id AND w.status = 'pending'"
          + " RETURNING w.id, w.queue, w.task_id, w.work_type, w.priority, w.delivery_count,"
          + " w.attempts, w.max_attempts, w.input_data, w.reply_to, w.created_at, w.lease_token,"
          + " w.lease_acquired_at, w.lease_expires_at, w.progress, w.reply_of, w.reply_error, w.headers)"
          + " SELECT x.expired, upd.* FROM x LEFT JOIN upd ON true";

  /**
   * The group statement's completions, after {@link #NOW}: the conditional updates of {@link
   * PostgresLeaseBatches#COMPLETE_ALL} (the refused ones are missing from the returned arrays).
   * The completions and the pick touch disjoint rows (in progress against pending), and all parts
   * see the same snapshot: a row completed here is not picked here. Parameters: ids, tokens, ids.
   */
  private static final String GROUP_COMPLETIONS =
      " done AS (UPDATE tether_work_items w SET status = 'completed', output_data = NULL,"
          + " lease_expires_at = NULL, error_message = NULL, completed_at = t.now, updated_at = t.now"
          + " FROM (SELECT * FROM unnest(?::bigint[], ?::bigint[]) AS u(id, token)"
          + " LIMIT (SELECT cardinality(?::bigint[]))) AS v(id, token), t"
          + " WHERE w.id = v.id AND w.lease_token = v.token"
          + " AND w.status NOT IN ('pending', 'completed', 'failed', 'cancelled')"
          + " RETURNING w.id, w.lease_token),";

  /**
   * The group statement's acquisitions: each picked row leased with the token, holder and lease
   * length at its position (in pick order) of the arrays. Parameters: tokens, holders, lease
   * millis.
   */
  private static final String GROUP_TAIL =
      " upd AS (UPDATE tether_work_items w SET status = 'in_progress', lease_holder = k.holder,"
          + " lease_token = k.token, lease_acquired_at = t.now,"
          + " lease_expires_at = t.now + k.ms * interval '1 millisecond',"
          + " heartbeat_at = t.now, delivery_count = w.delivery_count + 1, attempts = w.attempts + 1,"
          + " started_at = COALESCE(w.started_at, t.now), updated_at = t.now"
          + " FROM num JOIN unnest(?::bigint[], ?::text[], ?::bigint[]) WITH ORDINALITY AS k(token, holder, ms, n)"
          + " ON k.n = num.n, t"
          + " WHERE w.id = num.id AND w.status = 'pending'"
          + " RETURNING k.n AS ord, w.id, w.queue, w.task_id, w.work_type, w.priority, w.delivery_count,"
          + " w.attempts, w.max_attempts, w.input_data, w.reply_to, w.created_at, w.lease_token,"
          + " w.lease_acquired_at, w.lease_expires_at, w.progress, w.reply_of, w.reply_error, w.headers)"
          + " SELECT x.expired, (SELECT array_agg(id) FROM done) AS done_ids,"
          + " (SELECT array_agg(lease_token) FROM done) AS done_tokens, upd.*"
          + " FROM x LEFT JOIN upd ON true";

  /** The pick of {@link #PICK_HEAD} for up to {@code pickLimit} items, as statement text. */
  private static String pick(int pickLimit) {
    if (pickLimit < 1) {
      throw new IllegalArgumentException("an acquisition takes at least one item, was " + pickLimit);
    }
    return PICK_HEAD + " LIMIT " + pickLimit + PICK_TAIL;
  }

  /** The one-statement acquisition of up to n items (see {@link #ACQUIRE_TAIL}). */
  static String acquireSql(int n) {
    // Built per call (cheap beside the statement's round trip); the driver finds its prepared
    // statement by the text.
    return NOW + pick(n) + ACQUIRE_TAIL;
  }

  /**
   * The fused group statement picking up to n items. Parameters: now (null: the database clock),
   * ids, tokens, ids, queue, queue, queue, tokens, holders, lease millis.
   */
  static String groupSql(int n) {
    return NOW + GROUP_COMPLETIONS + pick(n) + GROUP_TAIL;
  }

  /** One acquisition of a fused group: who leases, for how long, and how many at most. */
  record Take(String holder, Duration leaseDuration, int maxItems) {}

  /**
   * What a fused group statement did: the completions' outcomes (null or the refusal, in the
   * order given), whether the queue needed the full acquisition (then nothing was acquired), and
   * each acquisition's leases (in the order given; highest priority first, then oldest).
   */
  record Fused(List<TetherStoreException> refusals, boolean expired, List<List<Lease>> leases) {}

  private final StoreEngine engine;
  private final LeaseDiagnosis diagnosis;

  PostgresAcquisitions(StoreEngine engine, LeaseDiagnosis diagnosis) {
    this.engine = engine;
    this.diagnosis = diagnosis;
  }

  /**
   * Acquires in one statement (run it auto-committed: one round trip) when the request has no
   * work type or task filter and the queue needs no full acquisition. Returns empty when the full
   * {@link Acquisitions#acquire} must run instead (nothing was taken then); else the leases,
   * highest priority first, then oldest.
   *
   * @param now the instant, or null for the database clock at the statement
   */
  Optional<List<Lease>> acquire(Connection c, AcquireRequest r, String holder, Instant now)
      throws SQLException {
    if (r.workType() != null || r.taskId() != null) {
      return Optional.empty();
    }
    Long[] tokens = new Long[r.maxItems()];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = Acquisitions.newToken();
    }
    boolean expired = false;
    List<Lease> out = new ArrayList<>(r.maxItems());
    try (PreparedStatement ps = c.prepareStatement(acquireSql(r.maxItems()))) {
      engine.setInstant(ps, 1, now);
      ps.setString(2, r.queue());
      ps.setString(3, r.queue());
      ps.setString(4, r.queue());
      ps.setString(5, holder);
      ps.setLong(6, r.leaseDuration().toMillis());
      ps.setArray(7, c.createArrayOf("bigint", tokens));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          expired |= rs.getBoolean(1);
          long id = rs.getLong("id");
          if (!rs.wasNull()) {
            out.add(taken(rs, id, holder));
          }
        }
      }
    }
    if (expired) {
      return Optional.empty();
    }
    out.sort(Acquisitions.DELIVERY_ORDER);
    return Optional.of(out);
  }

  /**
   * Completes {@code completions} (no output) and acquires {@code takes} from {@code queue} (no
   * filters) in one statement at one instant, run by the caller auto-committed. Rows are dealt to
   * the takes in order: the first gets the first picked rows up to its size, and so on. When the
   * queue needs the full acquisition nothing is picked and the completions still apply.
   *
   * @param now the instant, or null for the database clock at the statement
   */
  Fused completeAndAcquire(Connection c, List<LeaseKey> completions, String queue, List<Take> takes,
      Instant now) throws SQLException {
    Long[] ids = new Long[completions.size()];
    Long[] doneTokens = new Long[completions.size()];
    for (int i = 0; i < completions.size(); i++) {
      ids[i] = completions.get(i).id();
      doneTokens[i] = completions.get(i).token();
    }
    int total = 0;
    for (Take k : takes) {
      total += k.maxItems();
    }
    Long[] tokens = new Long[total];
    String[] holders = new String[total];
    Long[] millis = new Long[total];
    int[] owner = new int[total + 1]; // ordinal (1-based) -> index of its take
    int pos = 0;
    for (int t = 0; t < takes.size(); t++) {
      Take k = takes.get(t);
      for (int i = 0; i < k.maxItems(); i++) {
        tokens[pos] = Acquisitions.newToken();
        holders[pos] = k.holder();
        millis[pos] = k.leaseDuration().toMillis();
        owner[++pos] = t;
      }
    }
    boolean expired = false;
    List<List<Lease>> leases = new ArrayList<>(takes.size());
    for (int t = 0; t < takes.size(); t++) {
      leases.add(new ArrayList<>());
    }
    Set<LeaseKey> completed = new HashSet<>();
    try (PreparedStatement ps = c.prepareStatement(groupSql(total))) {
      engine.setInstant(ps, 1, now);
      Array idArray = c.createArrayOf("bigint", ids);
      ps.setArray(2, idArray);
      ps.setArray(3, c.createArrayOf("bigint", doneTokens));
      ps.setArray(4, idArray);
      ps.setString(5, queue);
      ps.setString(6, queue);
      ps.setString(7, queue);
      ps.setArray(8, c.createArrayOf("bigint", tokens));
      ps.setArray(9, c.createArrayOf("text", holders));
      ps.setArray(10, c.createArrayOf("bigint", millis));
      boolean first = true;
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          expired |= rs.getBoolean(1);
          if (first) {
            first = false;
            Array doneIds = rs.getArray("done_ids");
            if (doneIds != null) {
              Long[] di = (Long[]) doneIds.getArray();
              Long[] dt = (Long[]) rs.getArray("done_tokens").getArray();
              for (int i = 0; i < di.length; i++) {
                completed.add(new LeaseKey(di[i], dt[i]));
              }
            }
          }
          long id = rs.getLong("id");
          if (rs.wasNull()) {
            continue;
          }
          int t = owner[(int) rs.getLong("ord")];
          leases.get(t).add(taken(rs, id, takes.get(t).holder()));
        }
      }
    }
    for (List<Lease> l : leases) {
      l.sort(Acquisitions.DELIVERY_ORDER);
    }
    return new Fused(diagnosis.outcomes(c, completions, completed, "complete"), expired, leases);
  }

  /** A lease just taken by a one-statement acquisition, from its {@code RETURNING} row. */
  private Lease taken(ResultSet rs, long id, String holder) throws SQLException {
    return new Lease(
        id,
        rs.getLong("lease_token"),
        holder,
        rs.getString("queue"),
        rs.getString("task_id"),
        rs.getString("work_type"),
        rs.getInt("priority"),
        rs.getInt("delivery_count"),
        rs.getInt("attempts"),
        rs.getInt("max_attempts"),
        engine.getInstant(rs, "lease_acquired_at"),
        engine.getInstant(rs, "lease_expires_at"),
        rs.getBytes("input_data"),
        rs.getString("reply_to"),
        engine.getInstant(rs, "created_at"),
        rs.getBytes("progress"),
        ItemReads.getLongOrNull(rs, "reply_of"),
        rs.getBoolean("reply_error"),
        rs.getString("headers"));
  }
}
