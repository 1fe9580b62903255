package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;

/**
 * PostgreSQL's enqueues that SQLite has no form for: one keyless item in one auto-committed
 * statement that also reads the clock and sends the notification (one round trip), a group of
 * concurrent single enqueues in one such statement, and a run of keyless items in one statement
 * with one array per column. Stateless apart from the engine, so
 * thread-safe.
 */
final class PostgresInserts {
  /** Rows per one-statement array INSERT of a batch enqueue. */
  static final int CHUNK = 2000;

  /**
   * One keyless item: the instant is the parameter or, when null, the database clock read by the
   * statement itself, and the notifications (to the channels given, none for an empty array) are
   * sent by the same statement, so that auto-committed it is one round trip. Parameters: now,
   * queue, task, type, priority, max attempts, delay millis, reply-to, input, whether delayed
   * (scheduled), headers, reply-of id, whether an error reply, the notifications' payload, the
   * channels.
   */
  private static final String INSERT_ONE =
      "WITH t AS (SELECT COALESCE(?::timestamptz, date_trunc('milliseconds', clock_timestamp())) AS now),"
          + " ins AS (INSERT INTO tether_work_items (queue, task_id, work_type, status, priority, delivery_count,"
          + " max_attempts, available_at, reply_to, input_data, created_at, updated_at, scheduled, headers,"
          + " reply_of, reply_error)"
          + " SELECT ?, ?, ?, 'pending', ?, 0, ?, t.now + ?::bigint * interval '1 millisecond', ?, ?,"
          + " t.now, t.now, ?, ?, ?, ? FROM t RETURNING id)"
          + " SELECT ins.id, (SELECT count(pg_notify(ch, ?)) FROM unnest(?::text[]) ch) FROM ins";

  /**
   * A run of keyless items, one array per column, inserted in array order; an item is {@code
   * scheduled} when delayed ({@link Inserts#scheduled}). Parameters: now, now, now, then the arrays.
   */
  private static final String INSERT_ALL =
      "INSERT INTO tether_work_items (queue, task_id, work_type, status, priority, delivery_count,"
          + " max_attempts, available_at, reply_to, input_data, created_at, updated_at, scheduled, headers)"
          + " SELECT v.queue, v.task_id, v.work_type, 'pending', v.priority, 0, v.max_attempts,"
          + " ?::timestamptz + v.delay_ms * interval '1 millisecond', v.reply_to, v.input_data, ?, ?,"
          + " v.delay_ms > 0, v.headers"
          + " FROM unnest(?::text[], ?::text[], ?::text[], ?::int[], ?::int[], ?::bigint[], ?::text[],"
          + " ?::bytea[], ?::text[]) WITH ORDINALITY AS v(queue, task_id, work_type, priority, max_attempts,"
          + " delay_ms, reply_to, input_data, headers, ord) ORDER BY v.ord RETURNING id";

  /**
   * A group of keyless items from concurrent single enqueues ({@link EnqueueGroups}), one array
   * per column, in one auto-committed statement. Each row's id is drawn from the column's
   * sequence before the insert and returned with the row's position in the arrays (its
   * ordinality), so that every caller gets the id of its own item whatever order the rows are
   * inserted or returned in. The instant of a row is its array element or, when null, the
   * database clock read once by the statement. The notifications (one per channel given, each
   * with its payload) are sent once for the whole group. Parameters: instants, queues, task ids,
   * types, priorities, max attempts, delay millis, scheduled flags, reply-tos, inputs, headers,
   * reply-of ids, error-reply flags, then the channels and their payloads (empty arrays: no
   * notification). Returns (ordinality, id) per row.
   */
  private static final String INSERT_GROUP =
      "WITH t AS (SELECT date_trunc('milliseconds', clock_timestamp()) AS now,"
          + " pg_get_serial_sequence('tether_work_items', 'id')::regclass AS seq),"
          + " v AS MATERIALIZED (SELECT nextval(t.seq) AS id,"
          + " COALESCE(u.at, t.now) AS now, u.* FROM t, unnest(?::timestamptz[], ?::text[], ?::text[], ?::text[],"
          + " ?::int[], ?::int[], ?::bigint[], ?::boolean[], ?::text[], ?::bytea[], ?::text[], ?::bigint[],"
          + " ?::boolean[]) WITH ORDINALITY AS u(at, queue, task_id, work_type, priority, max_attempts, delay_ms,"
          + " scheduled, reply_to, input_data, headers, reply_of, reply_error, ord) ORDER BY u.ord),"
          + " ins AS (INSERT INTO tether_work_items (id, queue, task_id, work_type, status, priority,"
          + " delivery_count, max_attempts, available_at, reply_to, input_data, created_at, updated_at,"
          + " scheduled, headers, reply_of, reply_error) OVERRIDING SYSTEM VALUE"
          + " SELECT v.id, v.queue, v.task_id, v.work_type, 'pending', v.priority, 0, v.max_attempts,"
          + " v.now + v.delay_ms * interval '1 millisecond', v.reply_to, v.input_data, v.now, v.now,"
          + " v.scheduled, v.headers, v.reply_of, v.reply_error FROM v ORDER BY v.ord RETURNING id),"
          + " n AS MATERIALIZED (SELECT count(pg_notify(x.ch, x.p)) FROM unnest(?::text[], ?::text[]) AS x(ch, p))"
          + " SELECT v.ord, ins.id FROM ins JOIN v ON v.id = ins.id LEFT JOIN n ON TRUE";

  private final StoreEngine engine;

  PostgresInserts(StoreEngine engine) {
    this.engine = engine;
  }

  /**
   * Inserts one item without an idempotency key in one statement; returns its id.
   *
   * @param now the instant, or null for the database clock at the statement
   * @param channels the channels to notify once committed (none: no notification)
   * @param payload the notifications' payload
   */
  long insertOne(Connection c, NewWorkItem item, Instant now, String[] channels, String payload)
      throws SQLException {
    if (item.idempotencyKey() != null) {
      throw new IllegalArgumentException("the one-statement insert is for items without an idempotency key");
    }
    try (PreparedStatement ps = c.prepareStatement(INSERT_ONE)) {
      engine.setInstant(ps, 1, now);
      ps.setString(2, item.queue());
      ps.setString(3, item.taskId());
      ps.setString(4, item.workType());
      ps.setInt(5, item.priority());
      ps.setInt(6, item.maxAttempts());
      ps.setLong(7, item.delay().toMillis());
      ps.setString(8, item.replyTo());
      engine.setBytes(ps, 9, item.inputUnsafe());
      ps.setBoolean(10, Inserts.scheduled(item));
      ps.setString(11, item.headersColumn());
      if (item.replyOf() == null) {
        ps.setNull(12, java.sql.Types.BIGINT);
      } else {
        ps.setLong(12, item.replyOf());
      }
      ps.setBoolean(13, item.errorReply());
      ps.setString(14, payload);
      ps.setArray(15, c.createArrayOf("text", channels));
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new IllegalStateException("insert of an item on queue '" + item.queue()
              + "' returned no id; indicates a bug");
        }
        return rs.getLong(1);
      }
    }
  }

  /**
   * Inserts a group of keyless items in one statement ({@link #INSERT_GROUP}); returns their
   * ids in the order of {@code items}.
   *
   * @param nows each item's instant, or null for the database clock at the statement
   * @param channels the channels to notify once committed (once for the group; none: no notification)
   * @param payloads each channel's payload
   */
  long[] insertGroup(Connection c, List<NewWorkItem> items, List<Instant> nows, String[] channels,
      String[] payloads) throws SQLException {
    int n = items.size();
    for (NewWorkItem item : items) {
      if (item.idempotencyKey() != null) {
        throw new IllegalArgumentException("the group insert is for items without an idempotency key");
      }
    }
    Columns v = new Columns(items);
    OffsetDateTime[] ats = new OffsetDateTime[n];
    for (int i = 0; i < n; i++) {
      Instant at = nows.get(i);
      ats[i] = at == null ? null : OffsetDateTime.ofInstant(at.truncatedTo(ChronoUnit.MILLIS), ZoneOffset.UTC);
    }
    long[] ids = new long[n];
    boolean[] seen = new boolean[n];
    try (PreparedStatement ps = c.prepareStatement(INSERT_GROUP)) {
      ps.setArray(1, c.createArrayOf("timestamptz", ats));
      ps.setArray(2, c.createArrayOf("text", v.queues));
      ps.setArray(3, c.createArrayOf("text", v.taskIds));
      ps.setArray(4, c.createArrayOf("text", v.workTypes));
      ps.setArray(5, c.createArrayOf("int4", v.priorities));
      ps.setArray(6, c.createArrayOf("int4", v.maxAttempts));
      ps.setArray(7, c.createArrayOf("bigint", v.delays));
      ps.setArray(8, c.createArrayOf("bool", v.scheduled));
      ps.setArray(9, c.createArrayOf("text", v.replyTos));
      ps.setArray(10, c.createArrayOf("bytea", v.inputs));
      ps.setArray(11, c.createArrayOf("text", v.headers));
      ps.setArray(12, c.createArrayOf("bigint", v.replyOfs));
      ps.setArray(13, c.createArrayOf("bool", v.errorReplies));
      ps.setArray(14, c.createArrayOf("text", channels));
      ps.setArray(15, c.createArrayOf("text", payloads));
      int rows = 0;
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          int ord = (int) rs.getLong(1);
          if (ord < 1 || ord > n || seen[ord - 1]) {
            throw new IllegalStateException("a group insert of " + n + " items returned position " + ord
                + " out of range or twice; indicates a bug");
          }
          seen[ord - 1] = true;
          ids[ord - 1] = rs.getLong(2);
          rows++;
        }
      }
      if (rows != n) {
        throw new IllegalStateException("a group insert of " + n + " items returned " + rows
            + " ids; indicates a bug");
      }
    }
    return ids;
  }

  /** Inserts a run of keyless items in one statement; returns their ids in any order. */
  List<Long> insertRun(Connection c, List<NewWorkItem> run, Instant now) throws SQLException {
    int n = run.size();
    Columns v = new Columns(run);
    List<Long> ids = new ArrayList<>(n);
    try (PreparedStatement ps = c.prepareStatement(INSERT_ALL)) {
      engine.setInstant(ps, 1, now);
      engine.setInstant(ps, 2, now);
      engine.setInstant(ps, 3, now);
      ps.setArray(4, c.createArrayOf("text", v.queues));
      ps.setArray(5, c.createArrayOf("text", v.taskIds));
      ps.setArray(6, c.createArrayOf("text", v.workTypes));
      ps.setArray(7, c.createArrayOf("int4", v.priorities));
      ps.setArray(8, c.createArrayOf("int4", v.maxAttempts));
      ps.setArray(9, c.createArrayOf("bigint", v.delays));
      ps.setArray(10, c.createArrayOf("text", v.replyTos));
      ps.setArray(11, c.createArrayOf("bytea", v.inputs));
      ps.setArray(12, c.createArrayOf("text", v.headers));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getLong(1));
        }
      }
    }
    return ids;
  }

  /** The items' columns, one array each, for the array inserts. */
  private static final class Columns {
    final String[] queues;
    final String[] taskIds;
    final String[] workTypes;
    final Integer[] priorities;
    final Integer[] maxAttempts;
    final Long[] delays;
    final Boolean[] scheduled;
    final String[] replyTos;
    final byte[][] inputs;
    final String[] headers;
    final Long[] replyOfs;
    final Boolean[] errorReplies;

    Columns(List<NewWorkItem> items) {
      int n = items.size();
      queues = new String[n];
      taskIds = new String[n];
      workTypes = new String[n];
      priorities = new Integer[n];
      maxAttempts = new Integer[n];
      delays = new Long[n];
      scheduled = new Boolean[n];
      replyTos = new String[n];
      inputs = new byte[n][];
      headers = new String[n];
      replyOfs = new Long[n];
      errorReplies = new Boolean[n];
      for (int i = 0; i < n; i++) {
        NewWorkItem item = items.get(i);
        queues[i] = item.queue();
        taskIds[i] = item.taskId();
        workTypes[i] = item.workType();
        priorities[i] = item.priority();
        maxAttempts[i] = item.maxAttempts();
        delays[i] = item.delay().toMillis();
        scheduled[i] = Inserts.scheduled(item);
        replyTos[i] = item.replyTo();
        inputs[i] = item.inputUnsafe();
        headers[i] = item.headersColumn();
        replyOfs[i] = item.replyOf();
        errorReplies[i] = item.errorReply();
      }
    }
  }
}
