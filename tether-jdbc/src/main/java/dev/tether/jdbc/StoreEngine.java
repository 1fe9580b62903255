package dev.tether.jdbc;

import com.zaxxer.hikari.HikariConfig;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Everything about a store that differs between SQLite and PostgreSQL, behind one interface with
 * one implementation per database ({@link SqliteEngine}, {@link PostgresEngine}): how instants and
 * bytes are bound and read, the SQL texts that differ, the statements one database has and the
 * other has not (PostgreSQL's one-statement enqueue, acquisition and group statement, its
 * array-bound batches), how a write transaction begins and ends, how group commits, renewal
 * batches and single enqueues run (one auto-committed statement or a transaction), the clock, the
 * notifications, pool settings, migration locking, and which errors say the database is
 * unusable. The rest of the store's code is the same on both and never asks which database it
 * runs on.
 *
 * <p>One engine per store; it holds the store's per-database state (SQLite's writer lock and
 * statement cache). Implementations are thread-safe. Methods that take a {@link Connection} run on
 * the caller's connection inside the caller's transaction (or in auto-commit) and never commit,
 * roll back or close it unless they say so.
 */
interface StoreEngine {

  /**
   * Picks the engine for a JDBC URL of a pool the store creates.
   *
   * @throws IllegalArgumentException if the URL names neither SQLite nor PostgreSQL
   */
  static StoreEngine forUrl(String url, TetherStoreConfig config) {
    String lower = url.toLowerCase(Locale.ROOT);
    if (lower.startsWith("jdbc:sqlite:")) {
      return new SqliteEngine(config, true);
    }
    if (lower.startsWith("jdbc:postgresql:")) {
      return new PostgresEngine(config);
    }
    throw new IllegalArgumentException("unsupported JDBC URL '" + url
        + "': Tether supports jdbc:sqlite:..., jdbc:postgresql://... or a bare SQLite file path");
  }

  /**
   * Picks the engine for the caller's data source from a connection's metadata.
   *
   * @throws SQLException if the metadata cannot be read
   * @throws IllegalArgumentException if the product is neither SQLite nor PostgreSQL
   */
  static StoreEngine forConnection(Connection connection, TetherStoreConfig config) throws SQLException {
    String product = connection.getMetaData().getDatabaseProductName();
    String lower = product.toLowerCase(Locale.ROOT);
    if (lower.contains("sqlite")) {
      return new SqliteEngine(config, false);
    }
    if (lower.contains("postgres")) {
      return new PostgresEngine(config);
    }
    throw new IllegalArgumentException(
        "unsupported database product '" + product + "': Tether supports SQLite and PostgreSQL");
  }

  /** The public name of this engine ({@link TetherStore#engine()}). */
  TetherStore.Engine kind();

  // ------------------------------------------------------------------ connections and pool

  /** Configures the pool the store creates on {@code url} (data source, pool size, pragmas). */
  void configurePool(HikariConfig pool, String url);

  /** Whether a failure to create the pool is worth another try within the busy timeout. */
  boolean retryOpen(RuntimeException failure);

  /** Prepares the database on a first connection, before the migration. */
  void initialize(Connection c) throws SQLException;

  /** Prepares each connection borrowed from the pool for the store's use. */
  void prepare(Connection c) throws SQLException;

  /**
   * The statements the group committer keeps prepared across transactions ({@link
   * StatementCache} on the store's own SQLite pool), else {@link Statements#FRESH}.
   */
  Statements groupStatements();

  /** Releases what the engine holds (cached statements); after the pool closed. */
  void close();

  /**
   * Runs a short read whose answer must come within {@code timeout} even when the server stops
   * answering (a readiness probe).
   */
  <T> T boundedRead(Connection c, Duration timeout, SqlWork<T> work) throws SQLException;

  // ------------------------------------------------------------------ write transactions

  /** Before a write transaction borrows its connection: waits for the store's writer slot, if any. */
  void acquireWriteLock();

  /** After a write transaction returned its connection: frees the writer slot taken before it. */
  void releaseWriteLock();

  /** Begins a write transaction on a connection in auto-commit mode. */
  void begin(Connection c) throws SQLException;

  /** Commits the transaction {@link #begin} started. */
  void commit(Connection c) throws SQLException;

  /** Rolls back the transaction {@link #begin} started; forgets what it left unusable. */
  void rollback(Connection c) throws SQLException;

  /** After the transaction ended either way: leaves the connection in auto-commit mode. */
  void afterTransaction(Connection c);

  /** Migrations: takes the lock that makes one process apply each version, inside the transaction. */
  void lockMigrations(Connection c) throws SQLException;

  /** Migrations: the directory of this engine's scripts under {@code dev/tether/jdbc/migrations/}. */
  String migrationScripts();

  /**
   * Migrations, inside their transaction before {@link #lockMigrations}: creates the schema that
   * is to hold the tables unless it exists (serialized with other processes doing the same).
   *
   * @throws UnsupportedOperationException on an engine without schemas
   */
  void createSchema(Connection c, String schema) throws SQLException;

  /**
   * The schema the store's own pool puts its tables in, when the store must create it: the
   * configured schema, or the URL's single {@code currentSchema}; null when there is none.
   */
  String schemaToCreate();

  /**
   * Puts a caller's connection on {@code schema} ({@link SchemaSwitch}); returns what to give
   * back to {@link #leaveSchema}.
   *
   * @throws UnsupportedOperationException on an engine without schemas
   */
  String enterSchema(Connection c, String schema) throws SQLException;

  /** Gives a caller's connection back the setting {@link #enterSchema} returned. */
  void leaveSchema(Connection c, String previous) throws SQLException;

  /** Whether {@code e} says a table does not exist (validating a schema that is missing). */
  boolean isUndefinedTable(SQLException e);

  // ------------------------------------------------------------------ how the hot paths run

  /**
   * Enqueues one item durably: in one auto-committed statement where the engine has one for it,
   * else in a write transaction ({@link TetherStore#insertInTransaction}). Notifies listeners.
   */
  long enqueue(TetherStore store, String what, NewWorkItem item, Clock clock);

  /**
   * Acquires for {@code holder}: through the store's group committer, as one statement, or in a
   * write transaction of its own, as this engine does it best.
   */
  List<Lease> acquire(TetherStore store, String what, AcquireRequest request, String holder, Clock clock);

  /**
   * Commits one group of the group committer; sets each acquisition's leases (or its own error)
   * and returns the completions' refusals in order.
   *
   * @throws TetherStoreException if the group failed as a whole (nothing of it applied)
   */
  List<TetherStoreException> commitGroup(TetherStore store, GroupCommitter.Group group);

  /** Runs a batch of renewals ({@link LeaseBatches#renewAll}) durably. */
  <T> T writeRenewals(TetherStore store, String what, SqlWork<T> work);

  // ------------------------------------------------------------------ clock

  /** The store's own clock: the database's ({@code clock_timestamp()}) or the system's. */
  Instant now(Connection c) throws SQLException;

  /**
   * The instant to bind for "now" in a statement that can read the database clock itself: null
   * where it does (no round trip), else {@link #now}.
   */
  Instant statementInstant(Connection c) throws SQLException;

  /**
   * Whether a statement that has just run on {@code c} is committed already, on its own (an
   * auto-committed statement), rather than part of a transaction still open. PostgreSQL: the
   * connection's auto-commit; SQLite: never (its writes run in {@code BEGIN IMMEDIATE}
   * transactions on connections the driver keeps in auto-commit mode).
   *
   * @param c the connection
   * @return true if what ran on {@code c} is committed
   * @throws SQLException if the connection cannot say
   */
  boolean committedAlone(Connection c) throws SQLException;

  // ------------------------------------------------------------------ notifications

  /** Whether enqueues of other processes wake this store's waiting receivers. */
  boolean notifies();

  /**
   * How often a waiting receive looks at the database without a wake-up: rarely where enqueues
   * of every process wake receivers (then the look only finds delayed items coming due and
   * expired leases), often where they do not.
   */
  Duration defaultPollInterval();

  /**
   * Inside an enqueue's transaction: notifies {@code channels} (other processes' listeners, {@link
   * WakeRoster}) with {@code payload} once it commits; nothing for an empty array.
   */
  void notifyItems(Connection c, String[] channels, String payload) throws SQLException;

  /**
   * Inside a transaction: tells every listening store of the database, once it commits, that
   * items of {@code queue} (null: of any queue) may be available. For the rare paths that do not
   * know the queue or have no store at hand; enqueues wake a few ({@link WakeRoster}). Does
   * nothing where the engine does not notify.
   */
  void notifyEveryone(Connection c, String queue) throws SQLException;

  /** Sets the channel {@link #notifyEveryone} notifies (the store's schema's); ignored where none. */
  default void broadcastOn(String channel) {}

  /**
   * One read-only look at a queue for a waiting receiver ({@link QueueProbe}), or null where the
   * engine has none (the receiver then looks by acquiring). {@code now} is the store's clock, or
   * null for the database's.
   */
  QueueProbe probe(Connection c, String queue, java.time.Instant now) throws SQLException;

  /**
   * Inside a cancellation's transaction: tells every process's listener, once it commits, that
   * {@code itemId} was cancelled, so that its holder stops at once ({@link CancelWatch}). Does
   * nothing where the engine does not notify (holders find it by their periodic check).
   */
  void notifyCancelled(Connection c, long itemId) throws SQLException;

  // ------------------------------------------------------------------ errors

  /** Whether this exception (one link of a cause chain) says the database went out of reach. */
  boolean isConnectionLoss(SQLException e);

  /** Whether it says the database cannot be used (resources, I/O, a broken file). */
  boolean isDatabaseFault(SQLException e);

  /** Whether the database aborted the transaction so that running it again may succeed. */
  boolean isRetryableAbort(SQLException e);

  // ------------------------------------------------------------------ binding

  /** Binds an instant (or SQL NULL), truncated to the stored millisecond resolution. */
  void setInstant(PreparedStatement ps, int index, Instant instant) throws SQLException;

  /** Reads an instant column; null for SQL NULL. */
  Instant getInstant(ResultSet rs, String column) throws SQLException;

  /** Binds nullable bytes. */
  void setBytes(PreparedStatement ps, int index, byte[] bytes) throws SQLException;

  // ------------------------------------------------------------------ SQL that differs

  /**
   * Marks a statement to be planned with its actual parameters at every execution (PostgreSQL: no
   * server-side prepared statement, whose generic plan may not know that a status is rare or
   * a limit small); nothing on SQLite. For ad hoc reads such as a dashboard's.
   */
  void plannedPerExecution(PreparedStatement ps) throws SQLException;

  /**
   * A condition that is true when the bytes of {@code column} (a BLOB / bytea) contain the bytes
   * bound to its one parameter (with {@link #setBytes}); case-sensitive, a plain byte match.
   */
  String bytesContain(String column);

  /** Appended to a pick to lock its rows, skipping rows other transactions hold; possibly empty. */
  String skipLocked();

  /** Appended to a read of one row to lock it until the transaction ends; possibly empty. */
  String forUpdate();

  /** The promotion of a queue's due scheduled items ({@link Acquisitions#promoteDue}). */
  String promoteSql();

  /** Serializes capacity checks of one queue until the transaction ends (where rows are not). */
  void lockQueue(Connection c, String queue) throws SQLException;

  /** Most keyless items {@link #insertRun} takes at once. */
  int insertChunk();

  /**
   * Inserts 2 to {@link #insertChunk()} items without idempotency keys; returns their ids in
   * any order.
   */
  List<Long> insertRun(Connection c, List<NewWorkItem> run, Instant now) throws SQLException;

  /**
   * Whether the full acquisition must look for expired leases of {@code queue} at {@code now}:
   * false only when a probe found none.
   */
  boolean mayHoldExpiredLeases(Connection c, Statements statements, String queue, Instant now)
      throws SQLException;

  /**
   * Leases the picked pending items, each with its lease's token; returns the ids whose
   * conditional update matched.
   */
  Set<Long> takePending(Connection c, Statements statements, List<Lease> picked, String holder,
      Instant now, Instant expires) throws SQLException;

  /**
   * Turns expired leases into retries or failures ({@link ExpiredLeases#reclaim}), each by a
   * conditional update on (id, token, status, expiry); returns those whose update matched, in
   * order, once each.
   */
  List<ExpiredLeases.Expired> reclaimRows(Connection c, List<ExpiredLeases.Expired> expired, Instant now)
      throws SQLException;

  /** Inserts checkpoints of one kind, all at {@code now}. */
  void insertCheckpoints(Connection c, String kind, List<Checkpoints.Entry> entries, Instant now)
      throws SQLException;

  /**
   * Completes the leases in one statement, where the engine has one for these completions;
   * returns the leases completed, or empty when the caller must complete them one by one.
   */
  Optional<Set<LeaseKey>> completeInOneStatement(Connection c, List<LeaseBatches.Finish> finishes)
      throws SQLException;

  /**
   * Renews the leases in one statement, where the engine has one; returns the new expiry of each
   * lease renewed, or empty when the caller must renew them one by one.
   */
  Optional<Map<LeaseKey, Instant>> renewInOneStatement(Connection c, List<LeaseBatches.Renewal> renewals)
      throws SQLException;
}
