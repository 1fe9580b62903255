package dev.tether.jdbc;

import dev.tether.jdbc.internal.Dialect;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The SQL of the work-item state machine, shared by {@link LeaseManager}, {@link RecoverySweep}
 * and {@link JdbcMailbox}. Every state change is a conditional UPDATE on (id, lease_token,
 * status); when it matches no row, {@link #diagnose} finds out why and throws the matching
 * exception. Methods run on the caller's connection inside the caller's transaction.
 */
final class WorkItemRepository {
  private static final Logger LOG = LoggerFactory.getLogger(WorkItemRepository.class);

  static final String PENDING = "pending";
  static final String IN_PROGRESS = "in_progress";
  static final String COMPLETED = "completed";
  static final String FAILED = "failed";

  private static final String INSERT =
      "INSERT INTO work_items (queue, task_id, work_type, status, priority, delivery_count,"
          + " max_attempts, available_at, idempotency_key, reply_to, input_data, created_at,"
          + " updated_at, scheduled) VALUES (?, ?, ?, 'pending', ?, 0, ?, ?, ?, ?, ?, ?, ?, ?)"
          + " ON CONFLICT (queue, idempotency_key) DO NOTHING RETURNING id";

  private static final String TAKE =
      "UPDATE work_items SET status = 'in_progress', lease_holder = ?, lease_token = ?,"
          + " lease_acquired_at = ?, lease_expires_at = ?, heartbeat_at = ?,"
          + " delivery_count = delivery_count + 1, started_at = COALESCE(started_at, ?),"
          + " updated_at = ? WHERE id = ? AND status = 'pending'";

  private static final String RECLAIM =
      "UPDATE work_items SET status = ?, lease_holder = NULL, lease_token = NULL,"
          + " lease_expires_at = NULL, available_at = ?, scheduled = FALSE, error_message = ?,"
          + " completed_at = ?, updated_at = ? WHERE id = ? AND status = 'in_progress' AND lease_token = ?"
          + " AND lease_expires_at <= ?";

  private static final String CHECKPOINT =
      "INSERT INTO work_item_checkpoints (item_id, kind, lease_holder, lease_token,"
          + " delivery_count, heartbeat_at, reason, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)";

  /** Expired leases of the queue an acquire reclaims before picking (so they keep their place). */
  static final int RECLAIM_ON_ACQUIRE = 500;

  private static final SecureRandom TOKENS = new SecureRandom();

  private final Dialect d;
  /** Statements kept prepared across transactions (the group committer on SQLite), or null. */
  private final StatementCache cache;

  WorkItemRepository(Dialect dialect) {
    this(dialect, null);
  }

  WorkItemRepository(Dialect dialect, StatementCache cache) {
    this.d = dialect;
    this.cache = cache;
  }

  static long newToken() {
    long t;
    do {
      t = TOKENS.nextLong();
    } while (t == 0);
    return t;
  }

  // ---------------------------------------------------------------- enqueue

  long insert(Connection c, NewWorkItem item, Instant now) throws SQLException {
    if (item.idempotencyKey() != null) {
      Optional<Long> existing = findByKey(c, item.queue(), item.idempotencyKey());
      if (existing.isPresent()) {
        return existing.get();
      }
    }
    try (PreparedStatement ps = c.prepareStatement(INSERT)) {
      ps.setString(1, item.queue());
      ps.setString(2, item.taskId());
      ps.setString(3, item.workType());
      ps.setInt(4, item.priority());
      ps.setInt(5, item.maxAttempts());
      d.setInstant(ps, 6, now.plus(item.delay()));
      ps.setString(7, item.idempotencyKey());
      ps.setString(8, item.replyTo());
      d.setBytes(ps, 9, item.inputUnsafe());
      d.setInstant(ps, 10, now);
      d.setInstant(ps, 11, now);
      ps.setBoolean(12, scheduled(item));
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          return rs.getLong(1);
        }
      }
    }
    // Lost an idempotency race to a concurrent enqueue with the same key: return its item.
    return findByKey(c, item.queue(), item.idempotencyKey())
        .orElseThrow(
            () ->
                new IllegalStateException(
                    "insert of an item on queue '"
                        + item.queue()
                        + "' returned no id and no item has its key; indicates a bug"));
  }

  /**
   * A PostgreSQL enqueue of an item without an idempotency key in one statement: the instant is
   * the parameter or, when null, the database clock read by the statement itself, and the
   * notification (when a channel is given) is sent by the same statement, so that auto-committed
   * it is one round trip. Parameters: now, queue, task, type, priority, max attempts, delay
   * millis, reply-to, input, whether delayed (scheduled), channel (or null: no notification).
   */
  /**
   * Whether a new item starts {@code scheduled} (kept out of the ready index until an acquisition
   * promotes it): when it was enqueued with a delay. {@link #INSERT_ALL_PG} says the same in SQL.
   */
  private static boolean scheduled(NewWorkItem item) {
    return !item.delay().isZero();
  }

  private static final String INSERT_ONE_PG =
      "WITH t AS (SELECT COALESCE(?::timestamptz, date_trunc('milliseconds', clock_timestamp())) AS now),"
          + " ins AS (INSERT INTO work_items (queue, task_id, work_type, status, priority, delivery_count,"
          + " max_attempts, available_at, reply_to, input_data, created_at, updated_at, scheduled)"
          + " SELECT ?, ?, ?, 'pending', ?, 0, ?, t.now + ?::bigint * interval '1 millisecond', ?, ?,"
          + " t.now, t.now, ? FROM t RETURNING id)"
          + " SELECT ins.id, CASE WHEN n.channel IS NOT NULL THEN pg_notify(n.channel, '') END"
          + " FROM ins, (SELECT ?::text AS channel) n";

  /**
   * Inserts one item without an idempotency key on PostgreSQL in one statement (see {@link
   * #INSERT_ONE_PG}); returns its id.
   *
   * @param now the instant, or null for the database clock at the statement
   * @param notifyChannel the channel to notify once committed, or null
   */
  long insertOnePostgres(Connection c, NewWorkItem item, Instant now, String notifyChannel)
      throws SQLException {
    if (d != Dialect.POSTGRES || item.idempotencyKey() != null) {
      throw new IllegalArgumentException("the one-statement insert is for PostgreSQL items without an idempotency key");
    }
    try (PreparedStatement ps = c.prepareStatement(INSERT_ONE_PG)) {
      d.setInstant(ps, 1, now);
      ps.setString(2, item.queue());
      ps.setString(3, item.taskId());
      ps.setString(4, item.workType());
      ps.setInt(5, item.priority());
      ps.setInt(6, item.maxAttempts());
      ps.setLong(7, item.delay().toMillis());
      ps.setString(8, item.replyTo());
      d.setBytes(ps, 9, item.inputUnsafe());
      ps.setBoolean(10, scheduled(item));
      ps.setString(11, notifyChannel);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new IllegalStateException("insert of an item on queue '" + item.queue()
              + "' returned no id; indicates a bug");
        }
        return rs.getLong(1);
      }
    }
  }

  /** Rows per multi-row INSERT of a batch enqueue (11 parameters each; well under both engines' limits). */
  static final int INSERT_CHUNK = 500;

  /** Rows per one-statement array INSERT of a batch enqueue on PostgreSQL. */
  static final int INSERT_CHUNK_PG = 2000;

  /**
   * Inserts items in order, returning their ids in the same order. Runs of items without an
   * idempotency key go in multi-row INSERTs of up to {@link #INSERT_CHUNK} rows (one round trip
   * per chunk); items with a key take the single-row path, which returns the existing item's id.
   */
  List<Long> insertAll(Connection c, List<NewWorkItem> items, Instant now) throws SQLException {
    List<Long> ids = new ArrayList<>(items.size());
    List<NewWorkItem> run = new ArrayList<>();
    for (NewWorkItem item : items) {
      if (item.idempotencyKey() == null) {
        run.add(item);
        if (run.size() == (d == Dialect.POSTGRES ? INSERT_CHUNK_PG : INSERT_CHUNK)) {
          ids.addAll(insertRun(c, run, now));
          run.clear();
        }
      } else {
        ids.addAll(insertRun(c, run, now));
        run.clear();
        ids.add(insert(c, item, now));
      }
    }
    ids.addAll(insertRun(c, run, now));
    return ids;
  }

  private List<Long> insertRun(Connection c, List<NewWorkItem> run, Instant now) throws SQLException {
    if (run.isEmpty()) {
      return List.of();
    }
    if (run.size() == 1) {
      return List.of(insert(c, run.get(0), now));
    }
    if (d == Dialect.POSTGRES) {
      return insertRunPostgres(c, run, now);
    }
    StringBuilder sql = new StringBuilder(
        "INSERT INTO work_items (queue, task_id, work_type, status, priority, delivery_count,"
            + " max_attempts, available_at, idempotency_key, reply_to, input_data, created_at,"
            + " updated_at, scheduled) VALUES ");
    for (int i = 0; i < run.size(); i++) {
      sql.append(i == 0 ? "" : ", ").append("(?, ?, ?, 'pending', ?, 0, ?, ?, NULL, ?, ?, ?, ?, ?)");
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
        d.setInstant(ps, p++, now.plus(item.delay()));
        ps.setString(p++, item.replyTo());
        d.setBytes(ps, p++, item.inputUnsafe());
        d.setInstant(ps, p++, now);
        d.setInstant(ps, p++, now);
        ps.setBoolean(p++, scheduled(item));
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getLong(1));
        }
      }
    }
    if (ids.size() != run.size()) {
      throw new IllegalStateException("a multi-row insert of " + run.size()
          + " items returned " + ids.size() + " ids; indicates a bug");
    }
    // Ids come from one sequence (PostgreSQL) or rowid (SQLite), assigned in VALUES order within
    // the statement; RETURNING does not promise an order, so restore it.
    ids.sort(Comparator.naturalOrder());
    return ids;
  }

  private static final String INSERT_ALL_PG =
      "INSERT INTO work_items (queue, task_id, work_type, status, priority, delivery_count,"
          + " max_attempts, available_at, reply_to, input_data, created_at, updated_at, scheduled)"
          + " SELECT v.queue, v.task_id, v.work_type, 'pending', v.priority, 0, v.max_attempts,"
          + " ?::timestamptz + v.delay_ms * interval '1 millisecond', v.reply_to, v.input_data, ?, ?,"
          + " v.delay_ms > 0"
          + " FROM unnest(?::text[], ?::text[], ?::text[], ?::int[], ?::int[], ?::bigint[], ?::text[],"
          + " ?::bytea[]) WITH ORDINALITY AS v(queue, task_id, work_type, priority, max_attempts,"
          + " delay_ms, reply_to, input_data, ord) ORDER BY v.ord RETURNING id";

  /** A run of keyless items in one statement with one array per column (PostgreSQL). */
  private List<Long> insertRunPostgres(Connection c, List<NewWorkItem> run, Instant now)
      throws SQLException {
    int n = run.size();
    String[] queues = new String[n];
    String[] taskIds = new String[n];
    String[] workTypes = new String[n];
    Integer[] priorities = new Integer[n];
    Integer[] maxAttempts = new Integer[n];
    Long[] delays = new Long[n];
    String[] replyTos = new String[n];
    byte[][] inputs = new byte[n][];
    for (int i = 0; i < n; i++) {
      NewWorkItem item = run.get(i);
      queues[i] = item.queue();
      taskIds[i] = item.taskId();
      workTypes[i] = item.workType();
      priorities[i] = item.priority();
      maxAttempts[i] = item.maxAttempts();
      delays[i] = item.delay().toMillis();
      replyTos[i] = item.replyTo();
      inputs[i] = item.inputUnsafe();
    }
    List<Long> ids = new ArrayList<>(n);
    try (PreparedStatement ps = c.prepareStatement(INSERT_ALL_PG)) {
      d.setInstant(ps, 1, now);
      d.setInstant(ps, 2, now);
      d.setInstant(ps, 3, now);
      ps.setArray(4, c.createArrayOf("text", queues));
      ps.setArray(5, c.createArrayOf("text", taskIds));
      ps.setArray(6, c.createArrayOf("text", workTypes));
      ps.setArray(7, c.createArrayOf("int4", priorities));
      ps.setArray(8, c.createArrayOf("int4", maxAttempts));
      ps.setArray(9, c.createArrayOf("bigint", delays));
      ps.setArray(10, c.createArrayOf("text", replyTos));
      ps.setArray(11, c.createArrayOf("bytea", inputs));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getLong(1));
        }
      }
    }
    if (ids.size() != n) {
      throw new IllegalStateException("a multi-row insert of " + n + " items returned " + ids.size()
          + " ids; indicates a bug");
    }
    // Identity values are drawn in insertion order (ORDER BY ordinality); RETURNING promises no order.
    ids.sort(Comparator.naturalOrder());
    return ids;
  }

  private Optional<Long> findByKey(Connection c, String queue, String key) throws SQLException {
    if (key == null) {
      return Optional.empty();
    }
    try (PreparedStatement ps =
        c.prepareStatement("SELECT id FROM work_items WHERE queue = ? AND idempotency_key = ?")) {
      ps.setString(1, queue);
      ps.setString(2, key);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(rs.getLong(1)) : Optional.empty();
      }
    }
  }

  /**
   * How many pending items a queue holds, as an SQL expression: two counts, each over one
   * partial index (ready, and scheduled for later); a plain {@code status = 'pending'} matches
   * neither index's predicate and would read the queue's history. Parameters: queue, queue.
   */
  static final String PENDING_COUNT =
      "(SELECT COUNT(*) FROM work_items WHERE queue = ? AND status = 'pending' AND scheduled = FALSE)"
          + " + (SELECT COUNT(*) FROM work_items WHERE queue = ? AND status = 'pending' AND scheduled = TRUE)";

  long countUnfinished(Connection c, String queue) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("SELECT " + PENDING_COUNT
            + " + (SELECT COUNT(*) FROM work_items WHERE queue = ? AND status = 'in_progress')")) {
      ps.setString(1, queue);
      ps.setString(2, queue);
      ps.setString(3, queue);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  void lockQueue(Connection c, String queue) throws SQLException {
    if (d == Dialect.POSTGRES) {
      try (PreparedStatement ps =
          c.prepareStatement("SELECT pg_advisory_xact_lock(hashtext('tether-queue:' || ?))")) {
        ps.setString(1, queue);
        ps.execute();
      }
    }
  }

  // ---------------------------------------------------------------- acquire

  private static final String TAKE_OVER =
      "UPDATE work_items SET lease_holder = ?, lease_token = ?, lease_acquired_at = ?,"
          + " lease_expires_at = ?, heartbeat_at = ?, delivery_count = delivery_count + 1,"
          + " updated_at = ? WHERE id = ? AND status = 'in_progress' AND lease_token = ?"
          + " AND lease_expires_at <= ?";

  private static final String CANDIDATE_COLUMNS =
      "SELECT id, queue, task_id, work_type, priority, delivery_count, max_attempts, input_data,"
          + " reply_to, created_at, lease_holder, lease_token, heartbeat_at, lease_expires_at"
          + " FROM work_items WHERE queue = ?";

  private static final String ANY_EXPIRED =
      "SELECT 1 FROM work_items WHERE queue = ? AND status = 'in_progress'"
          + " AND lease_expires_at <= ? LIMIT 1";

  /**
   * Makes up to 1,000 of the queue's scheduled (delayed) pending items that are due at {@code
   * now}, earliest due first, ordinary pending items, which the picks find through {@code
   * work_items_pending} (the next acquisition promotes more; when more than 1,000 come due at
   * once, a higher-priority item that came due later waits for that next acquisition): an index
   * range probe on {@code work_items_scheduled}, one descent when none is due. On PostgreSQL the
   * rows are taken {@code SKIP LOCKED}: a concurrent acquisition promoting them is not waited for
   * (it promotes them), so promotions never queue behind each other or deadlock with a
   * transaction that holds other rows. Parameters: queue, now.
   */
  static String promoteSql(Dialect d) {
    // On PostgreSQL the ids go in as an array (an init plan), so that the UPDATE finds them by
    // primary key whatever the planner guesses of the due count: a variant of this statement with
    // "id IN (subquery)" inside a CTE was planned as a hash join against a scan of the table.
    return d == Dialect.POSTGRES
        ? "UPDATE work_items SET scheduled = FALSE WHERE scheduled = TRUE AND id = ANY (ARRAY(SELECT id"
            + " FROM work_items WHERE queue = ? AND status = 'pending' AND scheduled = TRUE AND available_at <= ?"
            + " ORDER BY available_at, id LIMIT 1000 FOR UPDATE SKIP LOCKED))"
        : "UPDATE work_items SET scheduled = FALSE WHERE scheduled = TRUE AND id IN (SELECT id FROM work_items"
            + " WHERE queue = ? AND status = 'pending' AND scheduled = TRUE AND available_at <= ?"
            + " ORDER BY available_at, id LIMIT 1000)";
  }

  /** Promotes {@code queue}'s due scheduled items (see {@link #promoteSql}); returns how many. */
  int promoteDue(Connection c, String queue, Instant now) throws SQLException {
    try (StatementCache.Stmt st = StatementCache.prepare(cache, c, promoteSql(d))) {
      PreparedStatement ps = st.ps();
      ps.setString(1, queue);
      d.setInstant(ps, 2, now);
      return ps.executeUpdate();
    }
  }

  /** Whether {@code queue} holds an in-progress item whose lease expired at {@code now}. */
  private boolean anyExpired(Connection c, String queue, Instant now) throws SQLException {
    try (StatementCache.Stmt st = StatementCache.prepare(cache, c, ANY_EXPIRED)) {
      PreparedStatement ps = st.ps();
      ps.setString(1, queue);
      d.setInstant(ps, 2, now);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /** A row an acquire may deliver: pending and due, or in progress with an expired lease. */
  private record Candidate(Lease lease, Expired expired) {}

  List<Lease> acquire(
      Connection c, AcquireRequest r, String holder, Instant now, ReclaimResult.Counter counter)
      throws SQLException {
    // Expiry is redelivery. Items whose expired delivery was their last are failed first (one
    // checkpoint each), then expired items compete with pending ones by priority and age; an
    // expired lease is only taken over if this acquire delivers the item, so the old token stays
    // valid until the takeover.
    // On SQLite (one writer; this transaction holds the write lock) one indexed probe first: with
    // no expired lease in the queue, the two queries for expired leases below cannot find any.
    boolean anyExpired = d != Dialect.SQLITE || anyExpired(c, r.queue(), now);
    // Delayed items that came due join the pending items the pick below sees.
    promoteDue(c, r.queue(), now);
    List<Expired> doomed = anyExpired
        ? findExpired(c, r.queue(), now, RECLAIM_ON_ACQUIRE, false, true) : List.of();
    if (!doomed.isEmpty()) {
      ReclaimResult rr = reclaim(c, doomed, now);
      if (counter != null) {
        counter.add(rr);
      }
    }
    Instant expires = now.plus(r.leaseDuration());
    List<Candidate> candidates = new ArrayList<>();
    candidates.addAll(candidates(c, r, holder, now, expires, true));
    if (anyExpired) {
      candidates.addAll(candidates(c, r, holder, now, expires, false));
    }
    candidates.sort(Comparator.comparingInt((Candidate x) -> -x.lease().priority())
        .thenComparingLong(x -> x.lease().itemId()));
    List<Lease> taken = new ArrayList<>(r.maxItems());
    // Pending candidates are taken together in one statement after the loop: they are locked by
    // the pick (PostgreSQL, SKIP LOCKED) or the write lock (SQLite), so their updates cannot miss.
    List<Lease> pendingPicked = new ArrayList<>();
    try (StatementCache.Stmt takeOverStmt = StatementCache.prepare(cache, c, TAKE_OVER)) {
      PreparedStatement takeOver = takeOverStmt.ps();
      for (Candidate cand : candidates) {
        if (taken.size() + pendingPicked.size() == r.maxItems()) {
          break;
        }
        Lease l = cand.lease();
        int n;
        if (cand.expired() == null) {
          pendingPicked.add(l);
          continue;
        } else {
          Expired e = cand.expired();
          takeOver.setString(1, holder);
          takeOver.setLong(2, l.token());
          d.setInstant(takeOver, 3, now);
          d.setInstant(takeOver, 4, expires);
          d.setInstant(takeOver, 5, now);
          d.setInstant(takeOver, 6, now);
          takeOver.setLong(7, l.itemId());
          takeOver.setLong(8, e.token());
          d.setInstant(takeOver, 9, now);
          n = takeOver.executeUpdate();
          if (n == 1) {
            insertCheckpoint(c, e.id(), Checkpoint.LEASE_EXPIRED, e.holder(), e.token(),
                e.deliveryCount(), e.heartbeatAt(), "lease expired at " + e.expiresAt()
                    + " on delivery " + e.deliveryCount() + " of " + e.maxAttempts()
                    + "; redelivered to " + holder, now);
            if (counter != null) {
              counter.add(new ReclaimResult(1, 1, 0, 1));
            }
          }
        }
        if (n == 1) {
          taken.add(l);
        } else {
          LOG.debug("Item {} was taken by another transaction between pick and update", l.itemId());
        }
      }
    }
    if (!pendingPicked.isEmpty()) {
      taken.addAll(takePending(c, pendingPicked, holder, now, expires));
      taken.sort(Comparator.comparingInt((Lease x) -> -x.priority()).thenComparingLong(Lease::itemId));
    }
    return taken;
  }

  /**
   * The common part of the one-statement PostgreSQL acquisitions, after a CTE {@code t(now)}:
   * {@code x} says whether the queue needs the full acquisition at {@code t.now}: it holds an
   * expired lease, or a scheduled (delayed) pending item that is due and not yet promoted (two
   * index probes, each reading the earliest matching instant in index order rather than asking
   * {@code EXISTS}: the planner costs {@code EXISTS} as stopping at the first of many matches (a
   * third of the leases, for an instant it cannot see) and, with the statistics of a busy queue,
   * scanned the whole table, or every queue's leases, for one that was not there); {@code pick}
   * locks up to n pending due unscheduled items, highest priority then oldest, {@code SKIP
   * LOCKED}, and none when {@code x} is true; {@code num} numbers them in that order. Parameters:
   * queue, queue, queue.
   *
   * <p>n is a literal of the statement text ({@link #pickPg}), not a parameter: for a parameter
   * the planner's generic plan assumes a tenth of the queue's rows, so once a queue held about
   * 20,000 items PostgreSQL kept choosing custom plans and planned the statement at every
   * execution (a quarter of the backend's CPU in a drain). One statement text (and one prepared
   * statement per connection) per n; sizes are few.
   */
  private static final String PICK_PG_HEAD =
      " x AS (SELECT (SELECT e.lease_expires_at FROM work_items e WHERE e.queue = ?"
          + " AND e.status = 'in_progress' AND e.lease_expires_at <= (SELECT now FROM t)"
          + " ORDER BY e.lease_expires_at LIMIT 1) IS NOT NULL"
          + " OR COALESCE((SELECT s.available_at FROM work_items s WHERE s.queue = ?"
          + " AND s.status = 'pending' AND s.scheduled = TRUE ORDER BY s.available_at LIMIT 1)"
          + " <= (SELECT now FROM t), FALSE) AS expired),"
          + " pick AS (SELECT w.id, w.priority FROM work_items w, t WHERE w.queue = ? AND w.status = 'pending'"
          + " AND w.scheduled = FALSE AND w.available_at <= t.now AND NOT (SELECT expired FROM x)"
          + " ORDER BY w.priority DESC, w.id";

  private static final String PICK_PG_TAIL =
      " FOR UPDATE OF w SKIP LOCKED),"
          + " num AS (SELECT id, row_number() OVER (ORDER BY priority DESC, id) AS n FROM pick),";

  /** The pick of {@link #PICK_PG_HEAD} for up to {@code pickLimit} items, as statement text. */
  private static String pickPg(int pickLimit) {
    if (pickLimit < 1) {
      throw new IllegalArgumentException("an acquisition takes at least one item, was " + pickLimit);
    }
    return PICK_PG_HEAD + " LIMIT " + pickLimit + PICK_PG_TAIL;
  }

  /**
   * The PostgreSQL acquisition in one auto-committed statement, for the common case: when the
   * queue holds no expired lease and no due scheduled item (checked in the statement, at the
   * statement's instant), pick up to n pending due items (highest priority, then oldest; SKIP
   * LOCKED) and lease each with its own token from the array (in pick order). The first column
   * says whether the full acquisition must run instead (then nothing was taken: the caller runs
   * it, which redelivers or fails expired leases and promotes due scheduled items); the instant
   * is a scalar subquery there so that the checks are index range scans
   * (work_items_leased_by_queue, work_items_scheduled) rather than filters over every lease or
   * scheduled item of the queue. Parameters: now (null: the database clock), queue, queue,
   * queue, holder, lease millis, tokens; n is in the text ({@link #acquireFastPg}).
   */
  private static final String ACQUIRE_FAST_PG_HEAD =
      "WITH t AS (SELECT COALESCE(?::timestamptz, date_trunc('milliseconds', clock_timestamp())) AS now),";

  private static final String ACQUIRE_FAST_PG_TAIL =
      " upd AS (UPDATE work_items w SET status = 'in_progress', lease_holder = ?, lease_token = k.token,"
          + " lease_acquired_at = t.now, lease_expires_at = t.now + ?::bigint * interval '1 millisecond',"
          + " heartbeat_at = t.now, delivery_count = w.delivery_count + 1,"
          + " started_at = COALESCE(w.started_at, t.now), updated_at = t.now"
          + " FROM num JOIN unnest(?::bigint[]) WITH ORDINALITY AS k(token, n) ON k.n = num.n, t"
          + " WHERE w.id = num.id AND w.status = 'pending'"
          + " RETURNING w.id, w.queue, w.task_id, w.work_type, w.priority, w.delivery_count,"
          + " w.max_attempts, w.input_data, w.reply_to, w.created_at, w.lease_token,"
          + " w.lease_acquired_at, w.lease_expires_at)"
          + " SELECT x.expired, upd.* FROM x LEFT JOIN upd ON true";

  /** The one-statement acquisition (see {@link #ACQUIRE_FAST_PG_HEAD}) of up to n items. */
  static String acquireFastPg(int n) {
    // Built per call (about a microsecond beside a statement of half a millisecond); the driver
    // finds its prepared statement by the text.
    return ACQUIRE_FAST_PG_HEAD + pickPg(n) + ACQUIRE_FAST_PG_TAIL;
  }

  /**
   * Acquires on PostgreSQL in one statement (run it auto-committed: one round trip) when the
   * request has no work type or task filter and the queue holds no expired lease and no due
   * scheduled item. Returns empty when the full {@link #acquire} must run instead (filters,
   * expired leases to redeliver or fail, or due scheduled items to promote: nothing was taken
   * then); else the leases, highest priority first, then oldest.
   *
   * @param now the instant, or null for the database clock at the statement
   */
  Optional<List<Lease>> acquireFastPostgres(Connection c, AcquireRequest r, String holder, Instant now)
      throws SQLException {
    if (d != Dialect.POSTGRES || r.workType() != null || r.taskId() != null) {
      return Optional.empty();
    }
    Long[] tokens = new Long[r.maxItems()];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = newToken();
    }
    boolean expired = false;
    List<Lease> out = new ArrayList<>(r.maxItems());
    try (PreparedStatement ps = c.prepareStatement(acquireFastPg(r.maxItems()))) {
      d.setInstant(ps, 1, now);
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
          if (rs.wasNull()) {
            continue;
          }
          out.add(takenLease(rs, id, holder));
        }
      }
    }
    if (expired) {
      return Optional.empty();
    }
    out.sort(Comparator.comparingInt((Lease x) -> -x.priority()).thenComparingLong(Lease::itemId));
    return Optional.of(out);
  }

  /** A lease just taken by a one-statement acquisition, from its {@code RETURNING} row. */
  private Lease takenLease(ResultSet rs, long id, String holder) throws SQLException {
    return new Lease(
        id,
        rs.getLong("lease_token"),
        holder,
        rs.getString("queue"),
        rs.getString("task_id"),
        rs.getString("work_type"),
        rs.getInt("priority"),
        rs.getInt("delivery_count"),
        rs.getInt("max_attempts"),
        d.getInstant(rs, "lease_acquired_at"),
        d.getInstant(rs, "lease_expires_at"),
        rs.getBytes("input_data"),
        rs.getString("reply_to"),
        d.getInstant(rs, "created_at"));
  }

  /**
   * A group's completions and acquisitions from one queue on PostgreSQL in one auto-committed
   * statement (one round trip, one commit, one WAL flush for all of them), at the database clock
   * read once by the statement. The completions are the conditional updates of {@link
   * #COMPLETE_ALL_PG} (refused ones are missing from the returned arrays); the acquisitions are
   * the pick of {@link #acquireFastPg} for the sum of their sizes, each picked row leased with the
   * token, holder and lease length at its position (in pick order) of the arrays. The completions and
   * the pick touch disjoint rows (in progress against pending), and all parts see the same
   * snapshot: a row completed here is not picked here. When the queue holds expired leases or
   * due scheduled items nothing is picked (the first column says so) and the completions still
   * apply. Parameters: ids, tokens, ids, queue, queue, queue, tokens, holders, lease millis; n,
   * the sum, is in the text ({@link #completeAcquirePg}).
   */
  private static final String COMPLETE_ACQUIRE_PG_HEAD =
      "WITH t AS (SELECT date_trunc('milliseconds', clock_timestamp()) AS now),"
          + " done AS (UPDATE work_items w SET status = 'completed', output_data = NULL,"
          + " lease_expires_at = NULL, error_message = NULL, completed_at = t.now, updated_at = t.now"
          + " FROM (SELECT * FROM unnest(?::bigint[], ?::bigint[]) AS u(id, token)"
          + " LIMIT (SELECT cardinality(?::bigint[]))) AS v(id, token), t"
          + " WHERE w.id = v.id AND w.lease_token = v.token"
          + " AND w.status NOT IN ('pending', 'completed', 'failed')"
          + " RETURNING w.id, w.lease_token),";

  private static final String COMPLETE_ACQUIRE_PG_TAIL =
      " upd AS (UPDATE work_items w SET status = 'in_progress', lease_holder = k.holder,"
          + " lease_token = k.token, lease_acquired_at = t.now,"
          + " lease_expires_at = t.now + k.ms * interval '1 millisecond',"
          + " heartbeat_at = t.now, delivery_count = w.delivery_count + 1,"
          + " started_at = COALESCE(w.started_at, t.now), updated_at = t.now"
          + " FROM num JOIN unnest(?::bigint[], ?::text[], ?::bigint[]) WITH ORDINALITY AS k(token, holder, ms, n)"
          + " ON k.n = num.n, t"
          + " WHERE w.id = num.id AND w.status = 'pending'"
          + " RETURNING k.n AS ord, w.id, w.queue, w.task_id, w.work_type, w.priority, w.delivery_count,"
          + " w.max_attempts, w.input_data, w.reply_to, w.created_at, w.lease_token,"
          + " w.lease_acquired_at, w.lease_expires_at)"
          + " SELECT x.expired, (SELECT array_agg(id) FROM done) AS done_ids,"
          + " (SELECT array_agg(lease_token) FROM done) AS done_tokens, upd.*"
          + " FROM x LEFT JOIN upd ON true";

  /** The fused group statement (see {@link #COMPLETE_ACQUIRE_PG_HEAD}) picking up to n items. */
  static String completeAcquirePg(int n) {
    return COMPLETE_ACQUIRE_PG_HEAD + pickPg(n) + COMPLETE_ACQUIRE_PG_TAIL;
  }

  /** One acquisition of a fused PostgreSQL group: who leases, for how long, and how many at most. */
  record Take(String holder, Duration leaseDuration, int maxItems) {}

  /**
   * What a fused group statement did: the completions' outcomes (null or the refusal, in the
   * order given), whether the queue held expired leases or due scheduled items (then nothing was
   * acquired), and each acquisition's leases (in the order given; highest priority first, then
   * oldest).
   */
  record Fused(List<TetherStoreException> refusals, boolean expired, List<List<Lease>> leases) {}

  /**
   * Completes {@code finishes} (no output, database clock) and acquires {@code takes} from
   * {@code queue} (no filters) in one statement, run by the caller auto-committed; see {@link
   * #completeAcquirePg}. Rows are dealt to the takes in order: the first gets the first picked
   * rows up to its size, and so on. PostgreSQL only.
   */
  Fused completeAndAcquirePostgres(Connection c, List<Finish> finishes, String queue, List<Take> takes)
      throws SQLException {
    if (d != Dialect.POSTGRES) {
      throw new IllegalStateException("the fused group statement is for PostgreSQL");
    }
    Long[] ids = new Long[finishes.size()];
    Long[] doneTokens = new Long[finishes.size()];
    for (int i = 0; i < finishes.size(); i++) {
      Finish f = finishes.get(i);
      if (f.output() != null || f.now() != null) {
        throw new IllegalArgumentException("a fused completion has no output and no instant of its own");
      }
      ids[i] = f.id();
      doneTokens[i] = f.token();
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
        tokens[pos] = newToken();
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
    Set<List<Long>> matched = new HashSet<>();
    try (PreparedStatement ps = c.prepareStatement(completeAcquirePg(total))) {
      java.sql.Array idArray = c.createArrayOf("bigint", ids);
      ps.setArray(1, idArray);
      ps.setArray(2, c.createArrayOf("bigint", doneTokens));
      ps.setArray(3, idArray);
      ps.setString(4, queue);
      ps.setString(5, queue);
      ps.setString(6, queue);
      ps.setArray(7, c.createArrayOf("bigint", tokens));
      ps.setArray(8, c.createArrayOf("text", holders));
      ps.setArray(9, c.createArrayOf("bigint", millis));
      boolean first = true;
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          expired |= rs.getBoolean(1);
          if (first) {
            first = false;
            java.sql.Array doneIds = rs.getArray("done_ids");
            java.sql.Array doneToks = rs.getArray("done_tokens");
            if (doneIds != null) {
              Long[] di = (Long[]) doneIds.getArray();
              Long[] dt = (Long[]) doneToks.getArray();
              for (int i = 0; i < di.length; i++) {
                matched.add(List.of(di[i], dt[i]));
              }
            }
          }
          long id = rs.getLong("id");
          if (rs.wasNull()) {
            continue;
          }
          int t = owner[(int) rs.getLong("ord")];
          leases.get(t).add(takenLease(rs, id, takes.get(t).holder()));
        }
      }
    }
    for (List<Lease> l : leases) {
      l.sort(Comparator.comparingInt((Lease x) -> -x.priority()).thenComparingLong(Lease::itemId));
    }
    // As in completeAllPostgres: of two completions of one lease in a group, the first succeeds.
    List<TetherStoreException> out = new ArrayList<>(finishes.size());
    for (Finish f : finishes) {
      out.add(matched.remove(List.of(f.id(), f.token())) ? null : diagnose(c, f.id(), f.token(), "complete"));
    }
    return new Fused(out, expired, leases);
  }

  private static final String TAKE_ALL_PG =
      "UPDATE work_items w SET status = 'in_progress', lease_holder = ?, lease_token = v.token,"
          + " lease_acquired_at = ?, lease_expires_at = ?, heartbeat_at = ?,"
          + " delivery_count = w.delivery_count + 1, started_at = COALESCE(w.started_at, ?),"
          + " updated_at = ? FROM unnest(?::bigint[], ?::bigint[]) AS v(id, token)"
          + " WHERE w.id = v.id AND w.status = 'pending' RETURNING w.id";

  /**
   * Leases the picked pending items, each with its own new token: one statement on PostgreSQL
   * (arrays of ids and tokens), one batch on SQLite. Returns the leases whose update matched.
   */
  private List<Lease> takePending(
      Connection c, List<Lease> picked, String holder, Instant now, Instant expires)
      throws SQLException {
    Set<Long> matched = new HashSet<>();
    if (d == Dialect.POSTGRES) {
      Long[] ids = new Long[picked.size()];
      Long[] tokens = new Long[picked.size()];
      for (int i = 0; i < picked.size(); i++) {
        ids[i] = picked.get(i).itemId();
        tokens[i] = picked.get(i).token();
      }
      try (PreparedStatement ps = c.prepareStatement(TAKE_ALL_PG)) {
        ps.setString(1, holder);
        d.setInstant(ps, 2, now);
        d.setInstant(ps, 3, expires);
        d.setInstant(ps, 4, now);
        d.setInstant(ps, 5, now);
        d.setInstant(ps, 6, now);
        ps.setArray(7, c.createArrayOf("bigint", ids));
        ps.setArray(8, c.createArrayOf("bigint", tokens));
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            matched.add(rs.getLong(1));
          }
        }
      }
    } else {
      int[] counts;
      try (StatementCache.Stmt takeStmt = StatementCache.prepare(cache, c, TAKE)) {
        PreparedStatement take = takeStmt.ps();
        for (Lease l : picked) {
          take.setString(1, holder);
          take.setLong(2, l.token());
          d.setInstant(take, 3, now);
          d.setInstant(take, 4, expires);
          d.setInstant(take, 5, now);
          d.setInstant(take, 6, now);
          d.setInstant(take, 7, now);
          take.setLong(8, l.itemId());
          take.addBatch();
        }
        counts = take.executeBatch();
      }
      for (int i = 0; i < counts.length; i++) {
        if (counts[i] == 1) {
          matched.add(picked.get(i).itemId());
        }
      }
    }
    List<Lease> out = new ArrayList<>(picked.size());
    for (Lease l : picked) {
      if (matched.contains(l.itemId())) {
        out.add(l);
      } else {
        LOG.debug("Item {} was taken by another transaction between pick and update", l.itemId());
      }
    }
    return out;
  }

  /**
   * The pick of the full acquisition: pending due unscheduled items, or in-progress items whose
   * lease expired with deliveries left, of one queue, highest priority then oldest. Parameters:
   * queue, now, the work type and task id when filtered, n.
   */
  static String candidatesSql(Dialect d, boolean pending, boolean byWorkType, boolean byTaskId) {
    StringBuilder sql = new StringBuilder(CANDIDATE_COLUMNS);
    if (pending) {
      sql.append(" AND status = 'pending' AND scheduled = FALSE AND available_at <= ?");
    } else {
      sql.append(" AND status = 'in_progress' AND lease_expires_at <= ?"
          + " AND delivery_count < max_attempts");
    }
    if (byWorkType) {
      sql.append(" AND work_type = ?");
    }
    if (byTaskId) {
      sql.append(" AND task_id = ?");
    }
    sql.append(" ORDER BY priority DESC, id LIMIT ?");
    if (pending) {
      sql.append(d.skipLocked());
    }
    return sql.toString();
  }

  private List<Candidate> candidates(
      Connection c, AcquireRequest r, String holder, Instant now, Instant expires, boolean pending)
      throws SQLException {
    String sql = candidatesSql(d, pending, r.workType() != null, r.taskId() != null);
    List<Candidate> out = new ArrayList<>();
    try (StatementCache.Stmt st = StatementCache.prepare(cache, c, sql)) {
      PreparedStatement ps = st.ps();
      int i = 1;
      ps.setString(i++, r.queue());
      d.setInstant(ps, i++, now);
      if (r.workType() != null) {
        ps.setString(i++, r.workType());
      }
      if (r.taskId() != null) {
        ps.setString(i++, r.taskId());
      }
      ps.setInt(i, r.maxItems());
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          Lease lease = new Lease(
              rs.getLong("id"),
              newToken(),
              holder,
              rs.getString("queue"),
              rs.getString("task_id"),
              rs.getString("work_type"),
              rs.getInt("priority"),
              rs.getInt("delivery_count") + 1,
              rs.getInt("max_attempts"),
              now,
              expires,
              rs.getBytes("input_data"),
              rs.getString("reply_to"),
              d.getInstant(rs, "created_at"));
          Expired expired = pending ? null : new Expired(
              lease.itemId(),
              rs.getString("lease_holder"),
              rs.getLong("lease_token"),
              rs.getInt("delivery_count"),
              rs.getInt("max_attempts"),
              d.getInstant(rs, "heartbeat_at"),
              d.getInstant(rs, "lease_expires_at"));
          out.add(new Candidate(lease, expired));
        }
      }
    }
    return out;
  }

  // ---------------------------------------------------------------- expiry

  /** An expired lease as read by a pick query. */
  record Expired(
      long id,
      String holder,
      long token,
      int deliveryCount,
      int maxAttempts,
      Instant heartbeatAt,
      Instant expiresAt) {}

  /**
   * The expired leases, earliest expiry first, of one queue or (for the sweep) of all, optionally
   * only those on their last delivery, optionally locked {@code SKIP LOCKED}. Parameters: the
   * queue when by queue, now, n.
   */
  static String findExpiredSql(Dialect d, boolean byQueue, boolean doomedOnly, boolean lock) {
    return "SELECT id, lease_holder, lease_token, delivery_count, max_attempts, heartbeat_at,"
        + " lease_expires_at FROM work_items WHERE status = 'in_progress'"
        + (byQueue ? " AND queue = ?" : "")
        + (doomedOnly ? " AND delivery_count >= max_attempts" : "")
        + " AND lease_expires_at <= ? ORDER BY lease_expires_at LIMIT ?"
        + (lock ? d.skipLocked() : "");
  }

  List<Expired> findExpired(
      Connection c, String queue, Instant now, int limit, boolean lock, boolean doomedOnly)
      throws SQLException {
    String sql = findExpiredSql(d, queue != null, doomedOnly, lock);
    List<Expired> out = new ArrayList<>();
    try (StatementCache.Stmt st = StatementCache.prepare(cache, c, sql)) {
      PreparedStatement ps = st.ps();
      int i = 1;
      if (queue != null) {
        ps.setString(i++, queue);
      }
      d.setInstant(ps, i++, now);
      ps.setInt(i, limit);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(
              new Expired(
                  rs.getLong("id"),
                  rs.getString("lease_holder"),
                  rs.getLong("lease_token"),
                  rs.getInt("delivery_count"),
                  rs.getInt("max_attempts"),
                  d.getInstant(rs, "heartbeat_at"),
                  d.getInstant(rs, "lease_expires_at")));
        }
      }
    }
    return out;
  }

  /**
   * Turns expired leases into retries (or failures past the budget), each by a conditional
   * update that only matches if the lease is still the one that was read and still expired at
   * {@code now}; a renewal or takeover that landed in between makes it match nothing.
   */
  ReclaimResult reclaim(Connection c, List<Expired> expired, Instant now) throws SQLException {
    if (d == Dialect.POSTGRES && !expired.isEmpty()) {
      return reclaimPostgres(c, expired, now);
    }
    int recovered = 0;
    int failed = 0;
    List<Expired> applied = new ArrayList<>();
    List<Boolean> appliedFailed = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(RECLAIM)) {
      for (Expired e : expired) {
        boolean fail = e.deliveryCount() >= e.maxAttempts();
        String reason =
            "lease of "
                + e.holder()
                + " (token "
                + e.token()
                + ") expired at "
                + e.expiresAt()
                + " on delivery "
                + e.deliveryCount()
                + " of "
                + e.maxAttempts()
                + ", last heartbeat "
                + e.heartbeatAt()
                + (fail ? "; no attempts left, failed" : "; requeued");
        ps.setString(1, fail ? FAILED : PENDING);
        d.setInstant(ps, 2, now);
        ps.setString(3, reason);
        d.setInstant(ps, 4, fail ? now : null);
        d.setInstant(ps, 5, now);
        ps.setLong(6, e.id());
        ps.setLong(7, e.token());
        d.setInstant(ps, 8, now);
        ps.addBatch();
        applied.add(e);
        appliedFailed.add(fail);
      }
      int[] counts = ps.executeBatch();
      try (PreparedStatement cp = c.prepareStatement(CHECKPOINT)) {
        int checkpoints = 0;
        for (int i = 0; i < counts.length; i++) {
          if (counts[i] == Statement.SUCCESS_NO_INFO || counts[i] < 0) {
            throw new IllegalStateException(
                "the JDBC driver did not report the update count of a conditional update;"
                    + " Tether needs exact counts for fencing");
          }
          if (counts[i] != 1) {
            continue;
          }
          Expired e = applied.get(i);
          boolean fail = appliedFailed.get(i);
          if (fail) {
            failed++;
          } else {
            recovered++;
          }
          addCheckpoint(
              cp,
              e.id(),
              Checkpoint.LEASE_EXPIRED,
              e.holder(),
              e.token(),
              e.deliveryCount(),
              e.heartbeatAt(),
              "lease expired at "
                  + e.expiresAt()
                  + " on delivery "
                  + e.deliveryCount()
                  + " of "
                  + e.maxAttempts()
                  + (fail ? "; no attempts left: failed" : "; requeued"),
              now);
          checkpoints++;
        }
        if (checkpoints > 0) {
          cp.executeBatch();
        }
        return new ReclaimResult(expired.size(), recovered, failed, checkpoints);
      }
    }
  }

  /** Counts of one reclaim pass. */
  private static String reclaimReason(Expired e, boolean fail) {
    return "lease of " + e.holder() + " (token " + e.token() + ") expired at " + e.expiresAt()
        + " on delivery " + e.deliveryCount() + " of " + e.maxAttempts() + ", last heartbeat "
        + e.heartbeatAt() + (fail ? "; no attempts left, failed" : "; requeued");
  }

  private static String reclaimCheckpointReason(Expired e, boolean fail) {
    return "lease expired at " + e.expiresAt() + " on delivery " + e.deliveryCount() + " of "
        + e.maxAttempts() + (fail ? "; no attempts left: failed" : "; requeued");
  }

  private static final String RECLAIM_ALL_PG =
      "UPDATE work_items w SET status = v.new_status, lease_holder = NULL, lease_token = NULL,"
          + " lease_expires_at = NULL, available_at = ?, scheduled = FALSE, error_message = v.reason,"
          + " completed_at = CASE WHEN v.new_status = 'failed' THEN ?::timestamptz END, updated_at = ?"
          + " FROM unnest(?::bigint[], ?::bigint[], ?::text[], ?::text[]) AS v(id, token, new_status, reason)"
          + " WHERE w.id = v.id AND w.status = 'in_progress' AND w.lease_token = v.token"
          + " AND w.lease_expires_at <= ? RETURNING w.id";

  private static final String CHECKPOINT_ALL_PG =
      "INSERT INTO work_item_checkpoints (item_id, kind, lease_holder, lease_token, delivery_count,"
          + " heartbeat_at, reason, created_at) SELECT v.id, ?, v.holder, v.token, v.delivery_count,"
          + " to_timestamp(v.heartbeat_ms / 1000.0), v.reason, ?"
          + " FROM unnest(?::bigint[], ?::text[], ?::bigint[], ?::int[], ?::bigint[], ?::text[])"
          + " AS v(id, holder, token, delivery_count, heartbeat_ms, reason)";

  /**
   * {@link #reclaim} on PostgreSQL in two statements whatever the number of leases: one
   * set-based UPDATE, still conditional per row on (id, token, status, expiry), returning the
   * rows it changed, and one INSERT of their checkpoints.
   */
  private ReclaimResult reclaimPostgres(Connection c, List<Expired> expired, Instant now)
      throws SQLException {
    int n = expired.size();
    Long[] ids = new Long[n];
    Long[] tokens = new Long[n];
    String[] statuses = new String[n];
    String[] reasons = new String[n];
    for (int i = 0; i < n; i++) {
      Expired e = expired.get(i);
      boolean fail = e.deliveryCount() >= e.maxAttempts();
      ids[i] = e.id();
      tokens[i] = e.token();
      statuses[i] = fail ? FAILED : PENDING;
      reasons[i] = reclaimReason(e, fail);
    }
    Set<Long> changed = new HashSet<>();
    try (PreparedStatement ps = c.prepareStatement(RECLAIM_ALL_PG)) {
      d.setInstant(ps, 1, now);
      d.setInstant(ps, 2, now);
      d.setInstant(ps, 3, now);
      ps.setArray(4, c.createArrayOf("bigint", ids));
      ps.setArray(5, c.createArrayOf("bigint", tokens));
      ps.setArray(6, c.createArrayOf("text", statuses));
      ps.setArray(7, c.createArrayOf("text", reasons));
      d.setInstant(ps, 8, now);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          changed.add(rs.getLong(1));
        }
      }
    }
    int recovered = 0;
    int failed = 0;
    List<Long> cpIds = new ArrayList<>();
    List<String> cpHolders = new ArrayList<>();
    List<Long> cpTokens = new ArrayList<>();
    List<Integer> cpCounts = new ArrayList<>();
    List<Long> cpHeartbeats = new ArrayList<>();
    List<String> cpReasons = new ArrayList<>();
    for (Expired e : expired) {
      if (!changed.remove(e.id())) {
        continue; // renewed, taken over or finalized since it was read: not ours to reclaim
      }
      boolean fail = e.deliveryCount() >= e.maxAttempts();
      if (fail) {
        failed++;
      } else {
        recovered++;
      }
      cpIds.add(e.id());
      cpHolders.add(e.holder());
      cpTokens.add(e.token());
      cpCounts.add(e.deliveryCount());
      cpHeartbeats.add(e.heartbeatAt() == null ? null : e.heartbeatAt().toEpochMilli());
      cpReasons.add(reclaimCheckpointReason(e, fail));
    }
    if (!cpIds.isEmpty()) {
      try (PreparedStatement cp = c.prepareStatement(CHECKPOINT_ALL_PG)) {
        cp.setString(1, Checkpoint.LEASE_EXPIRED);
        d.setInstant(cp, 2, now);
        cp.setArray(3, c.createArrayOf("bigint", cpIds.toArray(new Long[0])));
        cp.setArray(4, c.createArrayOf("text", cpHolders.toArray(new String[0])));
        cp.setArray(5, c.createArrayOf("bigint", cpTokens.toArray(new Long[0])));
        cp.setArray(6, c.createArrayOf("int4", cpCounts.toArray(new Integer[0])));
        cp.setArray(7, c.createArrayOf("bigint", cpHeartbeats.toArray(new Long[0])));
        cp.setArray(8, c.createArrayOf("text", cpReasons.toArray(new String[0])));
        cp.executeUpdate();
      }
    }
    return new ReclaimResult(n, recovered, failed, cpIds.size());
  }

  record ReclaimResult(int found, int recovered, int failed, int checkpoints) {
    /** Accumulates results. Not thread-safe. */
    static final class Counter {
      int found;
      int recovered;
      int failed;
      int checkpoints;

      void add(ReclaimResult r) {
        found += r.found();
        recovered += r.recovered();
        failed += r.failed();
        checkpoints += r.checkpoints();
      }
    }
  }

  private void addCheckpoint(
      PreparedStatement cp,
      long itemId,
      String kind,
      String holder,
      Long token,
      int deliveryCount,
      Instant heartbeat,
      String reason,
      Instant now)
      throws SQLException {
    cp.setLong(1, itemId);
    cp.setString(2, kind);
    cp.setString(3, holder);
    Dialect.setLongOrNull(cp, 4, token);
    cp.setInt(5, deliveryCount);
    d.setInstant(cp, 6, heartbeat);
    cp.setString(7, reason);
    d.setInstant(cp, 8, now);
    cp.addBatch();
  }

  void insertCheckpoint(
      Connection c,
      long itemId,
      String kind,
      String holder,
      Long token,
      int deliveryCount,
      Instant heartbeat,
      String reason,
      Instant now)
      throws SQLException {
    try (PreparedStatement cp = c.prepareStatement(CHECKPOINT)) {
      addCheckpoint(cp, itemId, kind, holder, token, deliveryCount, heartbeat, reason, now);
      cp.executeBatch();
    }
  }

  // ---------------------------------------------------------------- lease operations

  Instant renew(Connection c, long id, long token, Instant now, Duration duration)
      throws SQLException {
    Instant target = now.plus(duration);
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE work_items SET lease_expires_at = CASE WHEN lease_expires_at > ? THEN"
                + " lease_expires_at ELSE ? END, heartbeat_at = ?, updated_at = ?"
                + " WHERE id = ? AND lease_token = ? AND status = 'in_progress'")) {
      d.setInstant(ps, 1, target);
      d.setInstant(ps, 2, target);
      d.setInstant(ps, 3, now);
      d.setInstant(ps, 4, now);
      ps.setLong(5, id);
      ps.setLong(6, token);
      if (ps.executeUpdate() != 1) {
        throw diagnose(c, id, token, "renew");
      }
    }
    try (PreparedStatement ps =
        c.prepareStatement("SELECT lease_expires_at FROM work_items WHERE id = ?")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return d.getInstant(rs, "lease_expires_at");
      }
    }
  }

  private static final String COMPLETE =
      "UPDATE work_items SET status = 'completed', output_data = ?, lease_expires_at = NULL,"
          + " error_message = NULL, completed_at = ?, updated_at = ?"
          + " WHERE id = ? AND lease_token = ? AND status = 'in_progress'";

  /**
   * One completion of a group: the lease, its output and the instant it completes at (null only
   * on PostgreSQL without output: the database clock).
   */
  record Finish(long id, long token, byte[] output, Instant now) {}

  /**
   * Completes several leases in the caller's transaction with one batched statement, each a
   * conditional update on (id, token, status). Returns, in the order given, null for each that
   * completed and the exception explaining the refusal of each whose update matched nothing
   * (which changed nothing).
   */
  List<TetherStoreException> completeAll(Connection c, List<Finish> finishes) throws SQLException {
    boolean simple = d == Dialect.POSTGRES;
    for (Finish f : finishes) {
      simple &= f.output() == null && Objects.equals(f.now(), finishes.get(0).now());
    }
    if (simple) {
      return completeAllPostgres(c, finishes);
    }
    for (Finish f : finishes) {
      if (f.now() == null) {
        throw new IllegalArgumentException("completion of item " + f.id() + " has no instant;"
            + " only a PostgreSQL completion without output may leave it to the database clock");
      }
    }
    int[] counts;
    try (StatementCache.Stmt st = StatementCache.prepare(cache, c, COMPLETE)) {
      PreparedStatement ps = st.ps();
      for (Finish f : finishes) {
        d.setBytes(ps, 1, f.output());
        d.setInstant(ps, 2, f.now());
        d.setInstant(ps, 3, f.now());
        ps.setLong(4, f.id());
        ps.setLong(5, f.token());
        ps.addBatch();
      }
      counts = ps.executeBatch();
    }
    List<TetherStoreException> out = new ArrayList<>(finishes.size());
    for (int i = 0; i < finishes.size(); i++) {
      if (counts[i] == Statement.SUCCESS_NO_INFO || counts[i] < 0) {
        throw new IllegalStateException("the JDBC driver did not report the update count of a"
            + " conditional completion (" + counts[i] + "); cannot tell which items completed");
      }
      out.add(counts[i] == 1 ? null : diagnose(c, finishes.get(i).id(), finishes.get(i).token(), "complete"));
    }
    return out;
  }

  // Completions find their rows by primary key, whatever the state of the partial indexes. They
  // say "in progress" as status NOT IN ('pending', 'completed', 'failed') (the same rows as
  // status = 'in_progress' under the CHECK constraint) so that the planner cannot answer it with
  // the partial indexes on status = 'in_progress', and hide the row count of their arrays behind
  // LIMIT (SELECT cardinality(ids)) (no limit in fact: the arrays' length) so that it plans one row
  // and a primary-key probe for it rather than a sequential scan. With status = 'in_progress' it
  // picked, while the partial indexes were small, a bitmap scan of a whole partial index (every
  // queue's leases) joined by hash, and kept that plan while the index filled with the entries of
  // rows that had left in-progress (dead until vacuum): a group then read them all (measured:
  // 5,560 index entries read to complete 7 rows, 6,000 items into a drain, autovacuum off).
  static final String COMPLETE_ALL_PG =
      "UPDATE work_items w SET status = 'completed', output_data = NULL, lease_expires_at = NULL,"
          + " error_message = NULL, completed_at = COALESCE(?::timestamptz, date_trunc('milliseconds', clock_timestamp())),"
          + " updated_at = COALESCE(?::timestamptz, date_trunc('milliseconds', clock_timestamp()))"
          + " FROM (SELECT * FROM unnest(?::bigint[], ?::bigint[]) AS u(id, token)"
          + " LIMIT (SELECT cardinality(?::bigint[]))) AS v(id, token)"
          + " WHERE w.id = v.id AND w.lease_token = v.token"
          + " AND w.status NOT IN ('pending', 'completed', 'failed')"
          + " RETURNING w.id, w.lease_token";

  private static final String COMPLETE_ONE_PG =
      "UPDATE work_items SET status = 'completed', output_data = NULL, lease_expires_at = NULL,"
          + " error_message = NULL, completed_at = COALESCE(?::timestamptz, date_trunc('milliseconds', clock_timestamp())),"
          + " updated_at = COALESCE(?::timestamptz, date_trunc('milliseconds', clock_timestamp()))"
          + " WHERE id = ? AND lease_token = ? AND status NOT IN ('pending', 'completed', 'failed')";

  /**
   * {@link #completeAll} in one statement: completions without output, at one instant (null:
   * the database clock at the statement).
   */
  private List<TetherStoreException> completeAllPostgres(Connection c, List<Finish> finishes)
      throws SQLException {
    if (finishes.size() == 1) {
      // A group of one: a plain UPDATE by primary key (no arrays to bind, unnest or join).
      Finish f = finishes.get(0);
      try (PreparedStatement ps = c.prepareStatement(COMPLETE_ONE_PG)) {
        d.setInstant(ps, 1, f.now());
        d.setInstant(ps, 2, f.now());
        ps.setLong(3, f.id());
        ps.setLong(4, f.token());
        List<TetherStoreException> out = new ArrayList<>(1);
        out.add(ps.executeUpdate() == 1 ? null : diagnose(c, f.id(), f.token(), "complete"));
        return out;
      }
    }
    Long[] ids = new Long[finishes.size()];
    Long[] tokens = new Long[finishes.size()];
    for (int i = 0; i < finishes.size(); i++) {
      ids[i] = finishes.get(i).id();
      tokens[i] = finishes.get(i).token();
    }
    Set<List<Long>> matched = new HashSet<>();
    try (PreparedStatement ps = c.prepareStatement(COMPLETE_ALL_PG)) {
      d.setInstant(ps, 1, finishes.get(0).now());
      d.setInstant(ps, 2, finishes.get(0).now());
      java.sql.Array idArray = c.createArrayOf("bigint", ids);
      ps.setArray(3, idArray);
      ps.setArray(4, c.createArrayOf("bigint", tokens));
      ps.setArray(5, idArray);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          matched.add(List.of(rs.getLong(1), rs.getLong(2)));
        }
      }
    }
    // A row is updated at most once per statement: of two completions of one lease in a group,
    // the first succeeds and the second is diagnosed (already finalized), as if run in sequence.
    List<TetherStoreException> out = new ArrayList<>(finishes.size());
    for (Finish f : finishes) {
      out.add(matched.remove(List.of(f.id(), f.token())) ? null : diagnose(c, f.id(), f.token(), "complete"));
    }
    return out;
  }

  /** One renewal of a batch: the lease, the extension, and the instant (null: database clock, PostgreSQL only). */
  record Renewal(long id, long token, Duration duration, Instant now) {}

  // Renewals find their rows by primary key, as the completions do (see COMPLETE_ALL_PG): "in
  // progress" said as status NOT IN ('pending', 'completed', 'failed') and the arrays' row count
  // hidden behind LIMIT (SELECT cardinality(ids)), so that the planner neither answers the status
  // test with the partial index of leases (whose dead entries it would then read) nor plans a
  // sequential scan for an array it cannot size. Parameters: ids, tokens, extension millis,
  // instants (epoch millis, null: the database clock), ids.
  static final String RENEW_ALL_PG =
      "UPDATE work_items w SET lease_expires_at = GREATEST(w.lease_expires_at,"
          + " v.now + v.extend_ms * interval '1 millisecond'), heartbeat_at = v.now, updated_at = v.now"
          + " FROM (SELECT u.id, u.token, u.extend_ms, COALESCE(to_timestamp(u.at_ms / 1000.0),"
          + " date_trunc('milliseconds', clock_timestamp())) AS now"
          + " FROM unnest(?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[]) AS u(id, token, extend_ms, at_ms)"
          + " LIMIT (SELECT cardinality(?::bigint[]))) v"
          + " WHERE w.id = v.id AND w.lease_token = v.token"
          + " AND w.status NOT IN ('pending', 'completed', 'failed')"
          + " RETURNING w.id, w.lease_token, w.lease_expires_at";

  /**
   * Renews several leases in the caller's transaction, each to {@code max(current expiry, now +
   * duration)} and conditional on (id, token, status): one statement on PostgreSQL. Returns, in
   * order, the new expiry ({@link Instant}) of each renewed lease and the refusal ({@link
   * TetherStoreException}) of each whose update matched nothing (which changed nothing). Two
   * renewals of one lease in a batch both get the later of their expiries.
   */
  List<Object> renewAll(Connection c, List<Renewal> renewals) throws SQLException {
    List<Object> out = new ArrayList<>(renewals.size());
    if (d != Dialect.POSTGRES) {
      for (Renewal r : renewals) {
        try {
          out.add(renew(c, r.id(), r.token(), r.now(), r.duration()));
        } catch (TetherStoreException refused) {
          out.add(refused);
        }
      }
      return out;
    }
    // One row per lease: duplicates would make the join update a row with an arbitrary one.
    Map<List<Long>, Renewal> unique = new LinkedHashMap<>();
    for (Renewal r : renewals) {
      unique.merge(List.of(r.id(), r.token()), r,
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
    for (Renewal r : unique.values()) {
      ids[i] = r.id();
      tokens[i] = r.token();
      extend[i] = r.duration().toMillis();
      at[i] = r.now() == null ? null : r.now().toEpochMilli();
      i++;
    }
    Map<List<Long>, Instant> renewed = new HashMap<>();
    try (PreparedStatement ps = c.prepareStatement(RENEW_ALL_PG)) {
      ps.setArray(1, c.createArrayOf("bigint", ids));
      ps.setArray(2, c.createArrayOf("bigint", tokens));
      ps.setArray(3, c.createArrayOf("bigint", extend));
      ps.setArray(4, c.createArrayOf("bigint", at));
      ps.setArray(5, c.createArrayOf("bigint", ids));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          renewed.put(List.of(rs.getLong(1), rs.getLong(2)), d.getInstant(rs, "lease_expires_at"));
        }
      }
    }
    Map<List<Long>, TetherStoreException> refusals = new HashMap<>();
    for (Renewal r : renewals) {
      List<Long> key = List.of(r.id(), r.token());
      Instant expiry = renewed.get(key);
      if (expiry != null) {
        out.add(expiry);
      } else {
        TetherStoreException e = refusals.get(key);
        if (e == null) {
          e = diagnose(c, r.id(), r.token(), "renew");
          refusals.put(key, e);
        }
        out.add(e);
      }
    }
    return out;
  }

  void complete(Connection c, long id, long token, byte[] output, Instant now)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(COMPLETE)) {
      d.setBytes(ps, 1, output);
      d.setInstant(ps, 2, now);
      d.setInstant(ps, 3, now);
      ps.setLong(4, id);
      ps.setLong(5, token);
      if (ps.executeUpdate() != 1) {
        throw diagnose(c, id, token, "complete");
      }
    }
  }

  void touchHeld(Connection c, long id, long token, Instant now) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE work_items SET updated_at = ? WHERE id = ? AND lease_token = ?"
                + " AND status = 'in_progress'")) {
      d.setInstant(ps, 1, now);
      ps.setLong(2, id);
      ps.setLong(3, token);
      if (ps.executeUpdate() != 1) {
        throw diagnose(c, id, token, "reply");
      }
    }
  }

  /** The row of a held lease, read (and on PostgreSQL locked) before a multi-step change. */
  record Held(long id, long token, String holder, int deliveryCount, int maxAttempts, Instant heartbeatAt) {}

  Held lockHeld(Connection c, long id, long token, String operation) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT lease_holder, delivery_count, max_attempts, heartbeat_at FROM work_items"
                + " WHERE id = ? AND lease_token = ? AND status = 'in_progress'"
                + (d == Dialect.POSTGRES ? " FOR UPDATE" : ""))) {
      ps.setLong(1, id);
      ps.setLong(2, token);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw diagnose(c, id, token, operation);
        }
        return new Held(
            id,
            token,
            rs.getString("lease_holder"),
            rs.getInt("delivery_count"),
            rs.getInt("max_attempts"),
            d.getInstant(rs, "heartbeat_at"));
      }
    }
  }

  private void requeue(Connection c, Held h, Instant availableAt, String error, Instant now)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE work_items SET status = 'pending', lease_holder = NULL, lease_token = NULL,"
                + " lease_expires_at = NULL, available_at = ?, error_message = COALESCE(?, error_message),"
                + " updated_at = ?, scheduled = ? WHERE id = ? AND lease_token = ? AND status = 'in_progress'")) {
      d.setInstant(ps, 1, availableAt);
      ps.setString(2, error);
      d.setInstant(ps, 3, now);
      ps.setBoolean(4, availableAt.isAfter(now));
      ps.setLong(5, h.id());
      ps.setLong(6, h.token());
      if (ps.executeUpdate() != 1) {
        throw diagnose(c, h.id(), h.token(), "requeue");
      }
    }
  }

  private void markFailed(Connection c, Held h, String error, Instant now) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE work_items SET status = 'failed', lease_expires_at = NULL, error_message = ?,"
                + " completed_at = ?, updated_at = ? WHERE id = ? AND lease_token = ?"
                + " AND status = 'in_progress'")) {
      ps.setString(1, error);
      d.setInstant(ps, 2, now);
      d.setInstant(ps, 3, now);
      ps.setLong(4, h.id());
      ps.setLong(5, h.token());
      if (ps.executeUpdate() != 1) {
        throw diagnose(c, h.id(), h.token(), "fail");
      }
    }
  }

  ReleaseOutcome fail(
      Connection c, long id, long token, String error, Instant now, RetryBackoff backoff)
      throws SQLException {
    Held h = lockHeld(c, id, token, "release as failed");
    String err = error == null ? "failed without an error message" : error;
    if (h.deliveryCount() < h.maxAttempts()) {
      Duration delay = backoff.after(h.deliveryCount());
      requeue(c, h, now.plus(delay), err, now);
      insertCheckpoint(c, id, Checkpoint.RELEASED_FAILED, h.holder(), token, h.deliveryCount(),
          h.heartbeatAt(), err + " (delivery " + h.deliveryCount() + " of " + h.maxAttempts()
              + "; retry after " + delay + ")", now);
      return ReleaseOutcome.RETRY_SCHEDULED;
    }
    markFailed(c, h, err, now);
    insertCheckpoint(c, id, Checkpoint.RELEASED_FAILED, h.holder(), token, h.deliveryCount(),
        h.heartbeatAt(), err + " (delivery " + h.deliveryCount() + " of " + h.maxAttempts()
            + "; no attempts left: failed)", now);
    return ReleaseOutcome.FAILED;
  }

  void nack(Connection c, long id, long token, Duration delay, Instant now) throws SQLException {
    Held h = lockHeld(c, id, token, "hand back");
    requeue(c, h, now.plus(delay), null, now);
    insertCheckpoint(c, id, Checkpoint.NACKED, h.holder(), token, h.deliveryCount(), h.heartbeatAt(),
        "handed back, visible again after " + delay, now);
  }

  void deadLetter(Connection c, long id, long token, String reason, Instant now)
      throws SQLException {
    Held h = lockHeld(c, id, token, "dead-letter");
    String r = reason == null ? "dead-lettered" : reason;
    markFailed(c, h, r, now);
    insertCheckpoint(c, id, Checkpoint.DEAD_LETTERED, h.holder(), token, h.deliveryCount(),
        h.heartbeatAt(), r, now);
  }

  /** Works out why a conditional update on (id, token) matched nothing. */
  TetherStoreException diagnose(Connection c, long id, long token, String operation)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT status, lease_token, lease_holder, lease_expires_at FROM work_items WHERE id = ?")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return new LeaseExpiredException(
              "cannot " + operation + " work item " + id + " with lease token " + token
                  + ": the item no longer exists (purged or deleted by retention); stop working on it",
              id, token, null, null);
        }
        String status = rs.getString("status");
        Long current = Dialect.getLongOrNull(rs, "lease_token");
        String holder = rs.getString("lease_holder");
        if (IN_PROGRESS.equals(status) && current != null && current != token) {
          return new LeaseConflictException(
              "cannot " + operation + " work item " + id + " with lease token " + token
                  + ": it is held by " + holder + " with another lease (token " + current
                  + ", expires " + d.getInstant(rs, "lease_expires_at")
                  + "); your lease expired and was taken over, stop working on it",
              id, token, holder, current);
        }
        if ((COMPLETED.equals(status) || FAILED.equals(status))
            && current != null && current == token) {
          return new ItemFinalizedException(id, token, status);
        }
        if (IN_PROGRESS.equals(status) && current != null && current == token) {
          return new IllegalStateLeaseException(
              "conditional " + operation + " of work item " + id + " with its current token " + token
                  + " matched no row although the lease is held; indicates a bug");
        }
        return new LeaseExpiredException(
            "cannot " + operation + " work item " + id + " with lease token " + token
                + ": the lease is no longer held (the item is now '" + status
                + "'; it expired and was reclaimed, was handed back, or was finalized through"
                + " another lease); stop working on it",
            id, token, status, holder);
      }
    }
  }

  /** Thrown for states that cannot happen; indicates a bug. */
  static final class IllegalStateLeaseException extends TetherStoreException {
    private static final long serialVersionUID = 1L;

    IllegalStateLeaseException(String message) {
      super(message);
    }
  }

  // ---------------------------------------------------------------- redrive, lookup

  boolean redrive(Connection c, long id, int additionalAttempts, Instant now) throws SQLException {
    int count;
    int max;
    try (PreparedStatement sel =
        c.prepareStatement(
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
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE work_items SET status = 'pending', max_attempts = ?, lease_holder = NULL,"
                + " lease_token = NULL, lease_expires_at = NULL, available_at = ?, scheduled = FALSE, completed_at = NULL,"
                + " updated_at = ? WHERE id = ? AND status = 'failed' AND delivery_count = ?")) {
      ps.setInt(1, newMax);
      d.setInstant(ps, 2, now);
      d.setInstant(ps, 3, now);
      ps.setLong(4, id);
      ps.setInt(5, count);
      if (ps.executeUpdate() != 1) {
        return false;
      }
    }
    insertCheckpoint(c, id, Checkpoint.REDRIVEN, null, null, count, null,
        "requeued by an operator after " + count + " deliveries (max attempts " + max + " -> "
            + newMax + ", " + additionalAttempts + " more)", now);
    return true;
  }

  List<Long> failedIds(Connection c, String queue) throws SQLException {
    List<Long> ids = new ArrayList<>();
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT id FROM work_items WHERE queue = ? AND status = 'failed' ORDER BY completed_at, id")) {
      ps.setString(1, queue);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getLong(1));
        }
      }
    }
    return ids;
  }

  Optional<WorkItem> find(Connection c, long id, boolean withCheckpoints) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT * FROM work_items WHERE id = ?")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        return Optional.of(mapItem(rs, withCheckpoints ? checkpoints(c, id) : List.of()));
      }
    }
  }

  WorkItem mapItem(ResultSet rs, List<Checkpoint> checkpoints) throws SQLException {
    return new WorkItem(
        rs.getLong("id"),
        rs.getString("queue"),
        rs.getString("task_id"),
        rs.getString("work_type"),
        WorkStatus.fromDb(rs.getString("status")),
        rs.getInt("priority"),
        rs.getString("lease_holder"),
        Dialect.getLongOrNull(rs, "lease_token"),
        d.getInstant(rs, "lease_acquired_at"),
        d.getInstant(rs, "lease_expires_at"),
        d.getInstant(rs, "heartbeat_at"),
        rs.getInt("delivery_count"),
        rs.getInt("max_attempts"),
        d.getInstant(rs, "available_at"),
        rs.getString("idempotency_key"),
        rs.getString("reply_to"),
        rs.getBytes("input_data"),
        rs.getBytes("output_data"),
        rs.getString("error_message"),
        d.getInstant(rs, "created_at"),
        d.getInstant(rs, "started_at"),
        d.getInstant(rs, "completed_at"),
        d.getInstant(rs, "updated_at"),
        checkpoints);
  }

  List<Checkpoint> checkpoints(Connection c, long itemId) throws SQLException {
    List<Checkpoint> out = new ArrayList<>();
    try (PreparedStatement ps =
        c.prepareStatement("SELECT * FROM work_item_checkpoints WHERE item_id = ? ORDER BY id")) {
      ps.setLong(1, itemId);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(
              new Checkpoint(
                  rs.getLong("id"),
                  rs.getLong("item_id"),
                  rs.getString("kind"),
                  rs.getString("lease_holder"),
                  Dialect.getLongOrNull(rs, "lease_token"),
                  rs.getInt("delivery_count"),
                  d.getInstant(rs, "heartbeat_at"),
                  rs.getString("reason"),
                  d.getInstant(rs, "created_at")));
        }
      }
    }
    return out;
  }

  /** Backoff before a failed item is retried. */
  @FunctionalInterface
  interface RetryBackoff {
    Duration after(int deliveryCount);
  }
}
