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
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import org.sqlite.SQLiteConfig;
import org.sqlite.SQLiteDataSource;
import org.sqlite.SQLiteException;

/**
 * The SQLite engine: one file in WAL mode, one writer at a time. Instants are integer epoch
 * milliseconds and the clock is the system's. Writes inside one store are serialized by a lock
 * held around each short write transaction, which begins with {@code BEGIN IMMEDIATE} (so it
 * never has to upgrade a read lock), and writers of other processes wait up to the busy timeout.
 * Because the write transaction is exclusive, picks need no row locks and the group committer's
 * statements can stay prepared on the store's own connections ({@link StatementCache}: SQLite
 * compiles every {@code prepareStatement}). Batches are JDBC batches of per-row statements; a
 * batch enqueue is a multi-row {@code INSERT} ({@link SqliteBatches}). Thread-safe.
 */
final class SqliteEngine implements StoreEngine {
  /** Rows per multi-row INSERT of a batch enqueue (11 parameters each; well under SQLite's limit). */
  static final int INSERT_CHUNK = 500;

  /**
   * Promotes up to 1,000 of the queue's scheduled (delayed) pending items due at {@code now},
   * earliest due first (the next acquisition promotes more; when more than 1,000 come due at
   * once, a higher-priority item that came due later waits for that next acquisition): an index
   * range probe on {@code tether_work_items_scheduled}, one descent when none is due. Parameters: queue,
   * now.
   */
  static final String PROMOTE =
      "UPDATE tether_work_items SET scheduled = FALSE WHERE scheduled = TRUE AND id IN (SELECT id FROM tether_work_items"
          + " WHERE queue = ? AND status = 'pending' AND scheduled = TRUE AND available_at <= ?"
          + " ORDER BY available_at, id LIMIT 1000)";

  private final TetherStoreConfig config;
  /** Whether the store created the pool (else the caller's connections need the store's settings). */
  private final boolean ownsPool;
  private final ReentrantLock writerLock = new ReentrantLock();
  /** The group committer's prepared statements on the store's own pool, or null. */
  private final StatementCache cache;
  private final SqliteBatches batches = new SqliteBatches(this);

  SqliteEngine(TetherStoreConfig config, boolean ownsPool) {
    if (config.schema().isPresent()) {
      throw new IllegalArgumentException("schema '" + config.schema().get() + "' was set, but SQLite"
          + " has no schemas: give Tether a database file of its own instead, or leave the schema unset");
    }
    this.config = config;
    this.ownsPool = ownsPool;
    // A caller's pool might close prepared statements behind the cache's back.
    this.cache = ownsPool ? new StatementCache() : null;
  }

  @Override
  public TetherStore.Engine kind() {
    return TetherStore.Engine.SQLITE;
  }

  @Override
  public String toString() {
    return "SQLITE";
  }

  /** The statement cache of the store's own pool, or null (tests). */
  StatementCache statementCache() {
    return cache;
  }

  // ------------------------------------------------------------------ connections and pool

  @Override
  public void configurePool(HikariConfig pool, String url) {
    SQLiteConfig sc = new SQLiteConfig();
    sc.setJournalMode(SQLiteConfig.JournalMode.WAL);
    sc.setSynchronous(config.sqliteSynchronous() == TetherStoreConfig.SqliteSynchronous.FULL
        ? SQLiteConfig.SynchronousMode.FULL
        : SQLiteConfig.SynchronousMode.NORMAL);
    sc.setBusyTimeout((int) Math.min(Integer.MAX_VALUE, config.busyTimeout().toMillis()));
    sc.enforceForeignKeys(true);
    SQLiteDataSource sds = new SQLiteDataSource(sc);
    sds.setUrl(url);
    pool.setDataSource(sds);
    pool.setMaximumPoolSize(config.maximumPoolSize() > 0
        ? config.maximumPoolSize() : TetherStoreConfig.DEFAULT_SQLITE_POOL_SIZE);
  }

  /**
   * A new file switched to WAL by several processes at once can answer SQLITE_BUSY while the
   * pool's first connection applies its pragmas, before the busy timeout is in force.
   */
  @Override
  public boolean retryOpen(RuntimeException failure) {
    return String.valueOf(failure.getMessage()).contains("SQLITE_BUSY");
  }

  @Override
  public void initialize(Connection c) throws SQLException {
    if (!ownsPool) {
      try (Statement st = c.createStatement()) {
        st.execute("PRAGMA journal_mode=WAL");
      }
    }
  }

  /**
   * A caller's connections get the busy timeout, and auto-commit so that the store's explicit
   * {@code BEGIN IMMEDIATE} starts the transaction.
   */
  @Override
  public void prepare(Connection c) throws SQLException {
    if (!ownsPool) {
      try (Statement st = c.createStatement()) {
        if (!c.getAutoCommit()) {
          c.setAutoCommit(true);
        }
        st.execute("PRAGMA busy_timeout=" + config.busyTimeout().toMillis());
      }
    }
  }

  @Override
  public Statements groupStatements() {
    return cache != null ? cache : Statements.FRESH;
  }

  @Override
  public void close() {
    if (cache != null) {
      // after the pool: closing its connections finalized them; this drops what is left
      cache.clear();
    }
  }

  @Override
  public <T> T boundedRead(Connection c, Duration timeout, SqlWork<T> work) throws SQLException {
    return work.run(c); // a local file: no server to stop answering
  }

  // ------------------------------------------------------------------ write transactions

  @Override
  public void acquireWriteLock() {
    writerLock.lock();
  }

  @Override
  public void releaseWriteLock() {
    writerLock.unlock();
  }

  /** Never: every write here runs in a {@code BEGIN IMMEDIATE} transaction (see {@link #begin}). */
  @Override
  public boolean committedAlone(Connection c) {
    return false;
  }

  @Override
  public void begin(Connection c) throws SQLException {
    try (StatementCache.Stmt st = groupStatements().prepare(c, "BEGIN IMMEDIATE")) {
      st.ps().execute();
    } catch (SQLException e) {
      invalidateStatements(c);
      throw e;
    }
  }

  @Override
  public void commit(Connection c) throws SQLException {
    try (StatementCache.Stmt st = groupStatements().prepare(c, "COMMIT")) {
      st.ps().execute();
    }
  }

  /** Also drops the connection's cached statements: after some errors the driver finalized them. */
  @Override
  public void rollback(Connection c) throws SQLException {
    try (Statement st = c.createStatement()) {
      st.execute("ROLLBACK");
    } finally {
      invalidateStatements(c);
    }
  }

  @Override
  public void afterTransaction(Connection c) {
    // BEGIN IMMEDIATE and COMMIT leave the connection in auto-commit mode
  }

  private void invalidateStatements(Connection c) {
    if (cache != null) {
      cache.invalidate(c);
    }
  }

  /** {@code BEGIN IMMEDIATE} already holds the database's write lock. */
  @Override
  public void lockMigrations(Connection c) {}

  @Override
  public void createSchema(Connection c, String schema) {
    throw new UnsupportedOperationException("SQLite has no schemas; indicates a bug");
  }

  @Override
  public String enterSchema(Connection c, String schema) {
    throw new UnsupportedOperationException("SQLite has no schemas; indicates a bug");
  }

  @Override
  public void leaveSchema(Connection c, String previous) {
    throw new UnsupportedOperationException("SQLite has no schemas; indicates a bug");
  }

  @Override
  public String schemaToCreate() {
    return null;
  }

  /** SQLite reports a missing table as SQLITE_ERROR with "no such table". */
  @Override
  public void plannedPerExecution(PreparedStatement ps) throws SQLException {
    // SQLite plans every statement when it is prepared; nothing to do
  }

  @Override
  public String bytesContain(String column) {
    return "instr(" + column + ", ?) > 0";
  }

  @Override
  public boolean isUndefinedTable(SQLException e) {
    return String.valueOf(e.getMessage()).contains("no such table");
  }

  @Override
  public String migrationScripts() {
    return "sqlite";
  }

  // ------------------------------------------------------------------ how the hot paths run

  @Override
  public long enqueue(TetherStore store, String what, NewWorkItem item, Clock clock) {
    return store.insertInTransaction(what, item, clock);
  }

  /** With group commit on, in the committer's next transaction: one writer at a time anyway. */
  @Override
  public List<Lease> acquire(TetherStore store, String what, AcquireRequest request, String holder, Clock clock) {
    if (config.groupCommit()) {
      return store.committer().acquire(request, holder, clock);
    }
    return store.acquireInTransaction(what, request, holder, clock);
  }

  @Override
  public List<TetherStoreException> commitGroup(TetherStore store, GroupCommitter.Group group) {
    return group.commitInTransaction(store);
  }

  @Override
  public <T> T writeRenewals(TetherStore store, String what, SqlWork<T> work) {
    return store.write(what, work);
  }

  // ------------------------------------------------------------------ clock and notifications

  @Override
  public Instant now(Connection c) {
    return Instant.now().truncatedTo(ChronoUnit.MILLIS);
  }

  @Override
  public Instant statementInstant(Connection c) {
    return now(c);
  }

  @Override
  public boolean notifies() {
    return false;
  }

  /** 100 ms: nothing tells this process of other processes' enqueues. */
  @Override
  public Duration defaultPollInterval() {
    return Duration.ofMillis(100);
  }

  @Override
  public void notifyItems(Connection c, String[] channels, String payload) {
    // other processes on the file find new items by polling
  }

  @Override
  public void notifyEveryone(Connection c, String queue) {
    // other processes on the file find new items by polling
  }

  /** None: a look is an acquisition attempt (one process's file, no roster of others to spare). */
  @Override
  public QueueProbe probe(Connection c, String queue, java.time.Instant now) {
    return null;
  }

  @Override
  public void notifyCancelled(Connection c, long itemId) {
    // holders in other processes find it by their periodic check
  }

  // ------------------------------------------------------------------ errors

  @Override
  public boolean isConnectionLoss(SQLException e) {
    return connectionLost(e);
  }

  /** Busy past the busy timeout: another process holds the file's write lock; transient. */
  static boolean connectionLost(SQLException e) {
    String msg = e.getMessage();
    return msg != null && msg.toLowerCase(Locale.ROOT).contains("sqlite_busy");
  }

  /** Read-only, I/O error, corrupt, full, cannot open, not a database. */
  @Override
  public boolean isDatabaseFault(SQLException e) {
    if (!(e instanceof SQLiteException)) {
      return false;
    }
    switch (((SQLiteException) e).getResultCode().code & 0xff) {
      case 8: // SQLITE_READONLY
      case 10: // SQLITE_IOERR
      case 11: // SQLITE_CORRUPT
      case 13: // SQLITE_FULL
      case 14: // SQLITE_CANTOPEN
      case 26: // SQLITE_NOTADB
        return true;
      default:
        return false;
    }
  }

  /** One writer at a time: SQLite never aborts a transaction to break a deadlock. */
  @Override
  public boolean isRetryableAbort(SQLException e) {
    return false;
  }

  // ------------------------------------------------------------------ binding

  @Override
  public void setInstant(PreparedStatement ps, int index, Instant instant) throws SQLException {
    if (instant == null) {
      ps.setNull(index, Types.BIGINT);
    } else {
      ps.setLong(index, instant.toEpochMilli());
    }
  }

  @Override
  public Instant getInstant(ResultSet rs, String column) throws SQLException {
    long millis = rs.getLong(column);
    return rs.wasNull() ? null : Instant.ofEpochMilli(millis);
  }

  @Override
  public void setBytes(PreparedStatement ps, int index, byte[] bytes) throws SQLException {
    if (bytes == null) {
      ps.setNull(index, Types.BLOB);
    } else {
      ps.setBytes(index, bytes);
    }
  }

  // ------------------------------------------------------------------ SQL that differs

  @Override
  public String skipLocked() {
    return ""; // the write transaction is exclusive
  }

  @Override
  public String forUpdate() {
    return ""; // the write transaction is exclusive
  }

  @Override
  public String promoteSql() {
    return PROMOTE;
  }

  @Override
  public void lockQueue(Connection c, String queue) {
    // the write transaction is exclusive
  }

  @Override
  public int insertChunk() {
    return INSERT_CHUNK;
  }

  @Override
  public List<Long> insertRun(Connection c, List<NewWorkItem> run, Instant now) throws SQLException {
    return batches.insertRun(c, run, now);
  }

  /**
   * One indexed probe: with no expired lease in the queue (the write lock keeps it so), the
   * acquisition's two searches for expired leases cannot find any.
   */
  @Override
  public boolean mayHoldExpiredLeases(Connection c, Statements statements, String queue, Instant now)
      throws SQLException {
    return batches.anyExpired(c, statements, queue, now);
  }

  @Override
  public Set<Long> takePending(Connection c, Statements statements, List<Lease> picked, String holder,
      Instant now, Instant expires) throws SQLException {
    return batches.takeAll(c, statements, picked, holder, now, expires);
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
  public Optional<Set<LeaseKey>> completeInOneStatement(Connection c, List<LeaseBatches.Finish> finishes) {
    return Optional.empty(); // one batched statement per lease
  }

  @Override
  public Optional<Map<LeaseKey, Instant>> renewInOneStatement(Connection c, List<LeaseBatches.Renewal> renewals) {
    return Optional.empty(); // one renewal after the other
  }
}
