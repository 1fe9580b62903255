package dev.tether.jdbc;

import com.zaxxer.hikari.HikariConfig;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.WeakHashMap;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The PostgreSQL engine: the database many worker machines share. Instants are {@code
 * timestamptz} and the clock is the database's ({@code clock_timestamp()}, the wall time of the
 * call), so that expiry never compares two machines' clocks. Picks lock their rows {@code FOR
 * UPDATE SKIP LOCKED}; write transactions are ordinary ones (auto-commit off). The hot paths are
 * one auto-committed statement each, one round trip: a keyless enqueue (with its {@code NOTIFY}),
 * an unfiltered acquisition, a group of completions, a group of completions with acquisitions
 * from one queue ({@link PostgresAcquisitions}), a batch of renewals; batches bind one array per
 * column ({@link PostgresInserts}, {@link PostgresLeaseBatches}). Concurrent keyless single
 * enqueues share one such statement ({@link EnqueueGroups}). Enqueues notify a channel that other
 * processes' stores listen on. Thread-safe.
 */
final class PostgresEngine implements StoreEngine {
  private static final Logger LOG = LoggerFactory.getLogger(PostgresEngine.class);

  /**
   * The channel of every enqueue before the wake-up roster ({@link WakeRoster}), one for the
   * whole database; now only the broadcast channel of a store whose schema is not known yet.
   */
  static final String CHANNEL = "tether_items";

  /** Notifies each channel of the array (parameter 2) with the payload (parameter 1). */
  private static final String NOTIFY_ALL = "SELECT count(pg_notify(ch, ?)) FROM unnest(?::text[]) ch";

  /**
   * A waiting receiver's read-only look at a queue (all three by index): whether an item is ready
   * now, and the milliseconds until the next delayed item and the next lease expiry (null when
   * none). Parameters: now (null: the database clock), queue, queue, queue.
   */
  private static final String PROBE =
      "WITH t AS (SELECT COALESCE(?::timestamptz, clock_timestamp()) AS now)"
          + " SELECT EXISTS (SELECT 1 FROM tether_work_items w WHERE w.queue = ? AND w.status = 'pending'"
          + " AND w.scheduled = FALSE AND w.available_at <= t.now),"
          + " (SELECT EXTRACT(EPOCH FROM (min(s.available_at) - t.now)) * 1000 FROM tether_work_items s"
          + " WHERE s.queue = ? AND s.status = 'pending' AND s.scheduled = TRUE),"
          + " (SELECT EXTRACT(EPOCH FROM (min(l.lease_expires_at) - t.now)) * 1000 FROM tether_work_items l"
          + " WHERE l.queue = ? AND l.status = 'in_progress')"
          + " FROM t";

  /** The channel a cancellation notifies, with the item id as payload. */
  static final String CANCEL_CHANNEL = "tether_cancelled";

  /**
   * Promotes up to 1,000 of the queue's scheduled (delayed) pending items due at {@code now},
   * earliest due first (see {@link SqliteEngine#PROMOTE}). The rows are taken {@code SKIP
   * LOCKED}: a concurrent acquisition promoting them is not waited for (it promotes them), so
   * promotions never queue behind each other or deadlock with a transaction that holds other
   * rows. The ids go in as an array (an init plan), so that the UPDATE finds them by primary key
   * whatever the planner guesses of the due count: with {@code id IN (subquery)} inside a CTE
   * the planner chose a hash join against a scan of the table. Parameters: queue, now.
   */
  static final String PROMOTE =
      "UPDATE tether_work_items SET scheduled = FALSE WHERE scheduled = TRUE AND id = ANY (ARRAY(SELECT id"
          + " FROM tether_work_items WHERE queue = ? AND status = 'pending' AND scheduled = TRUE AND available_at <= ?"
          + " ORDER BY available_at, id LIMIT 1000 FOR UPDATE SKIP LOCKED))";

  private final TetherStoreConfig config;
  /** The schema's broadcast channel ({@link WakeRoster#broadcastChannel}), once known. */
  private volatile String broadcastChannel = CHANNEL;
  private final PostgresAcquisitions acquisitions;
  private final PostgresInserts inserts;
  private final PostgresLeaseBatches batches;
  private volatile String schemaToCreate;
  /**
   * Concurrent single enqueues of this engine's (one) store, one group in flight: the next takes
   * everything queued meanwhile. Two in flight (any size, or the second only from 3 or 4 queued)
   * made groups smaller and 8 or 32 producers 10 to 25% slower (docs/PERFORMANCE.md, "One enqueue
   * group in flight").
   */
  private final EnqueueGroups enqueueGroups = new EnqueueGroups(this::insertGroup, 1, 1);

  /**
   * Whether single enqueues are grouped when group commit is on; system property {@code
   * tether.groupEnqueues} (default true), to measure the grouping against the same build.
   */
  private static final boolean GROUP_ENQUEUES =
      Boolean.parseBoolean(System.getProperty("tether.groupEnqueues", "true"));

  PostgresEngine(TetherStoreConfig config) {
    this.config = config;
    this.schemaToCreate = config.schema().orElse(null);
    this.acquisitions = new PostgresAcquisitions(this, new LeaseDiagnosis(this));
    this.inserts = new PostgresInserts(this);
    this.batches = new PostgresLeaseBatches(this);
  }

  @Override
  public TetherStore.Engine kind() {
    return TetherStore.Engine.POSTGRESQL;
  }

  @Override
  public String toString() {
    return "POSTGRES";
  }

  /** The one-statement acquisitions (tests). */
  PostgresAcquisitions acquisitions() {
    return acquisitions;
  }

  // ------------------------------------------------------------------ connections and pool

  @Override
  public void configurePool(HikariConfig pool, String url) {
    pool.setJdbcUrl(url);
    String fromUrl = currentSchemaOf(url);
    String configured = config.schema().orElse(null);
    if (configured != null && fromUrl != null && !configured.equalsIgnoreCase(fromUrl)) {
      throw new IllegalArgumentException("the schema was set to '" + configured + "' and the URL's"
          + " currentSchema to '" + fromUrl + "': give one of them, or the same schema in both");
    }
    if (configured != null) {
      pool.setSchema(configured); // every pooled connection's search_path
    }
    String single = configured != null ? configured : fromUrl;
    schemaToCreate = single != null && single.matches("[A-Za-z_][A-Za-z0-9_]{0,62}") ? single : null;
    pool.setMaximumPoolSize(config.maximumPoolSize() > 0
        ? config.maximumPoolSize() : TetherStoreConfig.DEFAULT_POSTGRES_POOL_SIZE);
    // Bound each new connection's login by the store's own connection timeout. Without the
    // property the driver uses DriverManager's login timeout, one value for the whole JVM that
    // every Hikari pool sets when it starts (the last one wins): another pool of the application
    // would decide how long this store's pool waits on a server that accepts but never answers.
    if (!url.toLowerCase(java.util.Locale.ROOT).contains("logintimeout=")) {
      long seconds = Math.max(1, (config.connectionTimeout().toMillis() + 999) / 1000);
      pool.addDataSourceProperty("loginTimeout", Long.toString(seconds));
    }
  }

  @Override
  public boolean retryOpen(RuntimeException failure) {
    return false;
  }

  @Override
  public void initialize(Connection c) {}

  /**
   * Allocates and frees 1 MB in the server process: glibc's malloc, seeing a chunk that large
   * freed, raises the process's thresholds (mmap to 1 MB, heap trim to 2 MB) for its lifetime,
   * so that the heap is no longer shrunk and regrown around each group statement. Constant
   * folding evaluates it while planning; it reads no table and writes nothing.
   */
  static final String RETAIN_BACKEND_MEMORY = "SELECT length(repeat('x', 1048576))";

  /**
   * The physical connections whose server process was asked to retain memory; weak, so that a
   * connection the pool closed leaves the set.
   */
  private final Map<Object, Boolean> retaining = new WeakHashMap<>();

  /**
   * On a connection's first borrow, asks its server process to retain memory ({@link
   * TetherStoreConfig.Builder#retainBackendMemory}). Only on a connection with no transaction
   * open (a caller's pool that does not auto-commit may leave its own setup, a {@code
   * search_path} or a role, in one): there the request waits for a later borrow, since the
   * rollback that ends the request's own transaction would undo it. A connection that cannot be
   * told apart from the next (no PostgreSQL connection behind the pool's wrapper) is left alone,
   * so that the statement is not run at every borrow. The request is an optimization: when it
   * fails, the connection is used as it is and not asked again.
   */
  @Override
  public void prepare(Connection c) throws SQLException {
    if (!config.retainBackendMemory() || !c.isWrapperFor(BaseConnection.class)) {
      return;
    }
    BaseConnection physical = c.unwrap(BaseConnection.class);
    synchronized (retaining) {
      if (retaining.containsKey(physical)) {
        return;
      }
    }
    if (physical.getTransactionState() != TransactionState.IDLE) {
      return;
    }
    boolean autoCommit = c.getAutoCommit();
    try (Statement st = c.createStatement()) {
      st.execute(RETAIN_BACKEND_MEMORY);
    } catch (SQLException e) {
      LOG.debug("Could not ask a server process to retain memory; using the connection as it is", e);
    } finally {
      if (!autoCommit) {
        c.rollback(); // ends the transaction the request opened, and only that one
      }
    }
    synchronized (retaining) {
      retaining.put(physical, Boolean.TRUE);
    }
  }

  /** How many connections were asked to retain memory and are still open (tests). */
  int retainingConnections() {
    synchronized (retaining) {
      return retaining.size();
    }
  }

  @Override
  public Statements groupStatements() {
    return Statements.FRESH; // the driver keeps server-side prepared statements by text
  }

  @Override
  public void close() {}

  /**
   * Bounds the read by a network timeout, so that a server that stopped answering does not hold
   * the caller until TCP gives up.
   */
  @Override
  public <T> T boundedRead(Connection c, Duration timeout, SqlWork<T> work) throws SQLException {
    int before = c.getNetworkTimeout();
    c.setNetworkTimeout(Runnable::run, (int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
    try {
      return work.run(c);
    } finally {
      try {
        c.setNetworkTimeout(Runnable::run, before);
      } catch (SQLException e) { // the connection broke: the pool drops it
        LOG.debug("Could not reset the network timeout of a probed connection", e);
      }
    }
  }

  // ------------------------------------------------------------------ write transactions

  /** Row locks serialize what must be serialized; writers run in parallel. */
  @Override
  public void acquireWriteLock() {}

  @Override
  public void releaseWriteLock() {}

  @Override
  public void begin(Connection c) throws SQLException {
    c.setAutoCommit(false);
  }

  @Override
  public boolean committedAlone(Connection c) throws SQLException {
    return c.getAutoCommit();
  }

  @Override
  public void commit(Connection c) throws SQLException {
    c.commit();
  }

  @Override
  public void rollback(Connection c) throws SQLException {
    c.rollback();
  }

  @Override
  public void afterTransaction(Connection c) {
    try {
      c.setAutoCommit(true);
    } catch (SQLException e) {
      LOG.debug("Could not reset auto-commit on a pooled connection", e);
    }
  }

  /** A transaction-scoped advisory lock keyed by the current schema. */
  @Override
  public void lockMigrations(Connection c) throws SQLException {
    try (Statement st = c.createStatement()) {
      st.execute("SELECT pg_advisory_xact_lock(hashtext('tether-migrations:' || current_schema()))");
    }
  }

  /** The {@code currentSchema} parameter of a pgjdbc URL, or null. */
  static String currentSchemaOf(String url) {
    int q = url.indexOf('?');
    if (q < 0) {
      return null;
    }
    for (String param : url.substring(q + 1).split("&")) {
      int eq = param.indexOf('=');
      if (eq > 0 && param.substring(0, eq).equalsIgnoreCase("currentSchema")) {
        String value = java.net.URLDecoder.decode(param.substring(eq + 1), java.nio.charset.StandardCharsets.UTF_8);
        return value.isBlank() ? null : value.trim();
      }
    }
    return null;
  }

  @Override
  public void createSchema(Connection c, String schema) throws SQLException {
    // An existing schema is left alone without asking for the CREATE privilege on the database
    // (an operator may have created it for a role that has none).
    try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM pg_namespace WHERE nspname = lower(?)")) {
      ps.setString(1, schema);
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          return;
        }
      }
    }
    // Locked on the key lockMigrations takes once the schema is current, so that processes
    // creating the same schema at once neither collide nor migrate it twice.
    try (PreparedStatement ps = c.prepareStatement(
        "SELECT pg_advisory_xact_lock(hashtext('tether-migrations:' || lower(?)))")) {
      ps.setString(1, schema);
      ps.execute();
    }
    try (Statement st = c.createStatement()) {
      st.execute("CREATE SCHEMA IF NOT EXISTS " + schema); // an identifier checked by the config
    }
  }

  /** Reads the session's search_path and sets it to the schema alone (two round trips). */
  @Override
  public String enterSchema(Connection c, String schema) throws SQLException {
    String previous;
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT current_setting('search_path')")) {
      rs.next();
      previous = rs.getString(1);
    }
    setSearchPath(c, schema);
    return previous;
  }

  @Override
  public void leaveSchema(Connection c, String previous) throws SQLException {
    setSearchPath(c, previous);
  }

  private static void setSearchPath(Connection c, String path) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT set_config('search_path', ?, false)")) {
      ps.setString(1, path);
      ps.execute();
    }
  }

  @Override
  public String schemaToCreate() {
    return schemaToCreate;
  }

  /** SQLState 42P01: undefined_table. */
  @Override
  public void plannedPerExecution(PreparedStatement ps) throws SQLException {
    ps.unwrap(org.postgresql.PGStatement.class).setPrepareThreshold(0);
  }

  @Override
  public String bytesContain(String column) {
    return "position(? in " + column + ") > 0";
  }

  @Override
  public boolean isUndefinedTable(SQLException e) {
    return "42P01".equals(e.getSQLState());
  }

  @Override
  public String migrationScripts() {
    return "postgres";
  }

  // ------------------------------------------------------------------ how the hot paths run

  /**
   * A keyless item in one auto-committed statement: the insert reads the clock and sends the
   * notification itself (one round trip, as atomic and durable as a transaction). With group
   * commit on, concurrent single enqueues share that statement ({@link EnqueueGroups}); one
   * arriving while none is in flight is written at once, alone. An item with an idempotency key
   * runs in a transaction of its own.
   */
  @Override
  public long enqueue(TetherStore store, String what, NewWorkItem item, Clock clock) {
    if (item.idempotencyKey() != null) {
      return store.insertInTransaction(what, item, clock);
    }
    if (config.groupCommit() && GROUP_ENQUEUES) {
      return enqueueGroups.enqueue(store, item, clock);
    }
    return insertGroup(store, what, List.of(item), java.util.Collections.singletonList(clock))[0];
  }

  /**
   * Writes keyless items in one auto-committed statement that also sends the notifications, once
   * (one item: {@link PostgresInserts#insertOne}; several: {@link PostgresInserts#insertGroup}):
   * a few listening stores of each queue ({@link TetherStore#wakeTargets}); returns their ids in
   * order. The one place a single enqueue's notifications are decided.
   *
   * @throws TetherStoreException if the statement failed
   */
  long[] insertGroup(TetherStore store, String what, List<NewWorkItem> items, List<Clock> clocks) {
    return store.writeOneStatement(what, c -> {
      if (items.size() == 1) {
        NewWorkItem item = items.get(0);
        Clock clock = clocks.get(0);
        return new long[] {inserts.insertOne(c, item, clock == null ? null : store.now(c, clock),
            store.wakeTargets(c, item.queue(), 1), WakeRoster.payload(0, item.queue()))};
      }
      List<Instant> nows = new ArrayList<>(items.size());
      for (Clock clock : clocks) {
        nows.add(clock == null ? null : store.now(c, clock));
      }
      java.util.Map<String, Integer> perQueue = new java.util.LinkedHashMap<>();
      for (NewWorkItem item : items) {
        perQueue.merge(item.queue(), 1, Integer::sum);
      }
      List<String> channels = new ArrayList<>();
      List<String> payloads = new ArrayList<>();
      for (java.util.Map.Entry<String, Integer> e : perQueue.entrySet()) {
        for (String channel : store.wakeTargets(c, e.getKey(), e.getValue())) {
          channels.add(channel);
          payloads.add(WakeRoster.payload(0, e.getKey()));
        }
      }
      return inserts.insertGroup(c, items, nows, channels.toArray(new String[0]), payloads.toArray(new String[0]));
    });
  }

  /** The group commit of single enqueues (tests). */
  EnqueueGroups enqueueGroups() {
    return enqueueGroups;
  }

  /**
   * With group commit on and no filters, in the group committer's next group (one statement with
   * concurrent completions, one commit for all); else without filters as one auto-committed
   * statement. The full acquisition runs in a transaction of its own when the request filters or
   * the queue holds expired leases or due scheduled items.
   */
  @Override
  public List<Lease> acquire(TetherStore store, String what, AcquireRequest request, String holder, Clock clock) {
    boolean unfiltered = request.workType() == null && request.taskId() == null;
    if (unfiltered && config.groupCommit()) {
      return store.committer().acquire(request, holder, clock);
    }
    if (unfiltered) {
      Optional<List<Lease>> taken = store.writeOneStatement(what,
          c -> acquisitions.acquire(c, request, holder, clock == null ? null : store.now(c, clock)));
      if (taken.isPresent()) {
        return taken.get();
      }
    }
    return store.acquireInTransaction(what, request, holder, clock);
  }

  /**
   * A group of completions without output on one clock is one auto-committed UPDATE (no COMMIT
   * round trip); with acquisitions from one queue (no filters) too, it is one statement with
   * them: one round trip and one WAL flush for the whole group instead of a commit per
   * acquisition beside the group's. Anything else runs in a transaction of its own.
   */
  @Override
  public List<TetherStoreException> commitGroup(TetherStore store, GroupCommitter.Group group) {
    if (!group.acquisitions().isEmpty() && group.oneClockNoOutput() && group.oneQueueUnfiltered()) {
      return commitFused(store, group);
    }
    if (group.acquisitions().isEmpty() && group.oneClockNoOutput()) {
      return store.writeOneStatement(group.what(), c -> group.complete(c, store));
    }
    return group.commitInTransaction(store);
  }

  /**
   * The fused group statement, at one reading of the group's clock (null: the database clock,
   * read by the statement). Sets each acquisition's leases; returns the completions' refusals.
   * When the queue needs the full acquisition the statement takes nothing (its completions still
   * commit); each acquisition then runs the full acquisition (which redelivers or fails the
   * expired items and promotes the due ones) in a transaction of its own, and only its own
   * failure is set on it.
   */
  private List<TetherStoreException> commitFused(TetherStore store, GroupCommitter.Group group) {
    List<LeaseKey> completions = new ArrayList<>(group.completions().size());
    for (GroupCommitter.Completion x : group.completions()) {
      completions.add(new LeaseKey(x.id, x.token));
    }
    List<PostgresAcquisitions.Take> takes = new ArrayList<>(group.acquisitions().size());
    for (GroupCommitter.Completion a : group.acquisitions()) {
      takes.add(new PostgresAcquisitions.Take(a.holder, a.acquire.leaseDuration(), a.acquire.maxItems()));
    }
    String queue = group.acquisitions().get(0).acquire.queue();
    Clock clock = group.clock();
    PostgresAcquisitions.Fused out = store.writeOneStatement(group.what(), c -> acquisitions.completeAndAcquire(
        c, completions, queue, takes, clock == null ? null : store.now(c, clock)));
    group.countFused();
    for (int i = 0; i < group.acquisitions().size(); i++) {
      GroupCommitter.Completion a = group.acquisitions().get(i);
      if (!out.expired()) {
        a.leases = out.leases().get(i);
        continue;
      }
      try {
        a.leases = store.acquireInTransaction("acquiring from queue '" + queue + "'", a.acquire, a.holder, a.clock);
      } catch (RuntimeException e) {
        a.error = e;
      }
    }
    return out.refusals();
  }

  /** A batch of renewals is one UPDATE: auto-commit saves the COMMIT round trip. */
  @Override
  public <T> T writeRenewals(TetherStore store, String what, SqlWork<T> work) {
    return store.writeOneStatement(what, work);
  }

  // ------------------------------------------------------------------ clock and notifications

  @Override
  public Instant now(Connection c) throws SQLException {
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT clock_timestamp()")) {
      rs.next();
      return rs.getObject(1, OffsetDateTime.class).toInstant().truncatedTo(ChronoUnit.MILLIS);
    }
  }

  /** Null: the statement reads {@code clock_timestamp()} itself, without a round trip of its own. */
  @Override
  public Instant statementInstant(Connection c) {
    return null;
  }

  @Override
  public boolean notifies() {
    return config.notifications();
  }

  /**
   * 3 s with notifications (enqueues wake receivers, and a waiting receiver learns when the next
   * delayed item or lease comes due from its {@link #probe}: the poll only finds leases other
   * processes took since), else 100 ms.
   */
  @Override
  public Duration defaultPollInterval() {
    return notifies() ? Duration.ofSeconds(3) : Duration.ofMillis(100);
  }

  /** {@code pg_notify} on each channel: delivered at commit, dropped on rollback. */
  @Override
  public void notifyItems(Connection c, String[] channels, String payload) throws SQLException {
    if (notifies() && channels.length > 0) {
      try (PreparedStatement ps = c.prepareStatement(NOTIFY_ALL)) {
        ps.setString(1, payload);
        ps.setArray(2, c.createArrayOf("text", channels));
        ps.execute();
      }
    }
  }

  /** {@code pg_notify} on the schema's broadcast channel, which every listening store of it hears. */
  @Override
  public void notifyEveryone(Connection c, String queue) throws SQLException {
    notifyItems(c, new String[] {broadcastChannel}, WakeRoster.payload(0, queue));
  }

  @Override
  public void broadcastOn(String channel) {
    this.broadcastChannel = channel;
  }

  @Override
  public QueueProbe probe(Connection c, String queue, Instant now) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(PROBE)) {
      setInstant(ps, 1, now);
      ps.setString(2, queue);
      ps.setString(3, queue);
      ps.setString(4, queue);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        boolean ready = rs.getBoolean(1);
        long due = -1;
        for (int col = 2; col <= 3; col++) {
          double ms = rs.getDouble(col);
          if (!rs.wasNull()) {
            long m = Math.max(0, (long) Math.ceil(ms));
            due = due < 0 ? m : Math.min(due, m);
          }
        }
        return new QueueProbe(ready || due == 0, due);
      }
    }
  }

  /** {@code pg_notify} on {@link #CANCEL_CHANNEL} with the item id: delivered at commit. */
  @Override
  public void notifyCancelled(Connection c, long itemId) throws SQLException {
    if (notifies()) {
      try (PreparedStatement ps = c.prepareStatement("SELECT pg_notify('tether_cancelled', ?)")) {
        ps.setString(1, Long.toString(itemId));
        ps.execute();
      }
    }
  }

  // ------------------------------------------------------------------ errors

  @Override
  public boolean isConnectionLoss(SQLException e) {
    return connectionLost(e);
  }

  /**
   * The server is shutting down, restarting or starting up (SQLState class 57P: 57P01
   * "terminating connection due to administrator command" on a restart).
   */
  static boolean connectionLost(SQLException e) {
    String state = e.getSQLState();
    return state != null && state.startsWith("57P");
  }

  /**
   * Insufficient resources (class 53: disk full, out of memory, too many connections), system
   * errors (class 58: I/O) and corruption (XX001, XX002).
   */
  @Override
  public boolean isDatabaseFault(SQLException e) {
    String state = e.getSQLState();
    return state != null && (state.startsWith("53") || state.startsWith("58")
        || "XX001".equals(state) || "XX002".equals(state));
  }

  /** A deadlock victim or a serialization failure (SQLState 40P01 / 40001). */
  @Override
  public boolean isRetryableAbort(SQLException e) {
    String state = e.getSQLState();
    return "40P01".equals(state) || "40001".equals(state);
  }

  // ------------------------------------------------------------------ binding

  @Override
  public void setInstant(PreparedStatement ps, int index, Instant instant) throws SQLException {
    if (instant == null) {
      ps.setNull(index, Types.TIMESTAMP_WITH_TIMEZONE);
    } else {
      ps.setObject(index, OffsetDateTime.ofInstant(instant.truncatedTo(ChronoUnit.MILLIS), ZoneOffset.UTC));
    }
  }

  @Override
  public Instant getInstant(ResultSet rs, String column) throws SQLException {
    OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
    return t == null ? null : t.toInstant();
  }

  @Override
  public void setBytes(PreparedStatement ps, int index, byte[] bytes) throws SQLException {
    if (bytes == null) {
      ps.setNull(index, Types.BINARY);
    } else {
      ps.setBytes(index, bytes);
    }
  }

  // ------------------------------------------------------------------ SQL that differs

  @Override
  public String skipLocked() {
    return " FOR UPDATE SKIP LOCKED";
  }

  @Override
  public String forUpdate() {
    return " FOR UPDATE";
  }

  @Override
  public String promoteSql() {
    return PROMOTE;
  }

  @Override
  public void lockQueue(Connection c, String queue) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_xact_lock(hashtext('tether-queue:' || ?))")) {
      ps.setString(1, queue);
      ps.execute();
    }
  }

  @Override
  public int insertChunk() {
    return PostgresInserts.CHUNK;
  }

  @Override
  public List<Long> insertRun(Connection c, List<NewWorkItem> run, Instant now) throws SQLException {
    return inserts.insertRun(c, run, now);
  }

  /**
   * Always true: here the full acquisition runs mostly after the one-statement check found an
   * expired lease or a due scheduled item, so a probe would mostly cost a round trip for nothing.
   */
  @Override
  public boolean mayHoldExpiredLeases(Connection c, Statements statements, String queue, Instant now) {
    return true;
  }

  @Override
  public Set<Long> takePending(Connection c, Statements statements, List<Lease> picked, String holder,
      Instant now, Instant expires) throws SQLException {
    return batches.takeAll(c, picked, holder, now, expires);
  }

  @Override
  public List<ExpiredLeases.Expired> reclaimRows(
      Connection c, List<ExpiredLeases.Expired> expired, Instant now) throws SQLException {
    return batches.reclaimAll(c, expired, now);
  }

  @Override
  public void insertCheckpoints(Connection c, String kind, List<Checkpoints.Entry> entries, Instant now)
      throws SQLException {
    batches.insertCheckpoints(c, kind, entries, now);
  }

  @Override
  public Optional<Set<LeaseKey>> completeInOneStatement(Connection c, List<LeaseBatches.Finish> finishes)
      throws SQLException {
    return batches.completeAll(c, finishes);
  }

  @Override
  public Optional<Map<LeaseKey, Instant>> renewInOneStatement(Connection c, List<LeaseBatches.Renewal> renewals)
      throws SQLException {
    return Optional.of(batches.renewAll(c, renewals));
  }
}
