package dev.tether.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.tether.jdbc.internal.Dialect;
import dev.tether.jdbc.internal.Migrations;
import dev.tether.jdbc.internal.SqlWork;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientConnectionException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sqlite.SQLiteConfig;
import org.sqlite.SQLiteDataSource;

/**
 * The entry point of the JDBC store: a connection source for one database (SQLite or PostgreSQL)
 * whose schema is migrated when the store is opened. {@link LeaseManager}, {@link RecoverySweep},
 * {@link QueueMonitor} and {@link JdbcMailbox} work on a store.
 *
 * <p>{@link #open(String)} creates a HikariCP pool for a {@code jdbc:sqlite:} or {@code
 * jdbc:postgresql:} URL, or a bare file path meaning SQLite (WAL mode, busy timeout, synchronous
 * NORMAL unless configured FULL); {@link #open(DataSource)} uses the caller's pool. {@link
 * #close()} closes only a pool the store created.
 *
 * <p>On SQLite, writes inside one store are serialized by a lock held around each short write
 * transaction (which begins with {@code BEGIN IMMEDIATE}), and writers of other processes wait up
 * to the busy timeout, so "database is locked" does not surface under normal load on one machine.
 *
 * <p>{@link #isAvailable()} tells whether the store looks usable, from what its own calls have
 * seen (for readiness probes; see {@link JdbcMailbox#isAvailable()}).
 *
 * <p>Thread-safe. Opening blocks for the connection and the migration.
 */
public final class TetherStore implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(TetherStore.class);
  private static final AtomicInteger POOL_SEQUENCE = new AtomicInteger();

  /** The database engine behind a store. */
  public enum Engine {
    /** SQLite, the embedded single-machine engine. */
    SQLITE,
    /** PostgreSQL, the engine many worker machines share. */
    POSTGRESQL
  }

  private final DataSource dataSource;
  private final HikariDataSource ownedPool;
  private final Dialect dialect;
  private final TetherStoreConfig config;
  private final String description;
  private final ReentrantLock writerLock = new ReentrantLock();
  private final Object itemsSignal = new Object();
  private final Map<String, int[]> queueSettings = new ConcurrentHashMap<>();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final GroupCommitter committer;
  /** The group committer's prepared statements (SQLite, own pool), or null. */
  private final StatementCache statements;
  private final RenewalBatcher renewals;
  private final StoreAvailability availability;
  private long itemsGeneration; // guarded by itemsSignal
  private volatile NotificationListener listener;

  private TetherStore(
      DataSource dataSource,
      HikariDataSource ownedPool,
      Dialect dialect,
      TetherStoreConfig config,
      String description) {
    this.dataSource = dataSource;
    this.ownedPool = ownedPool;
    this.dialect = dialect;
    this.config = config;
    this.description = description;
    this.availability = new StoreAvailability(description, dev.tether.Ticker.system());
    // One group in flight at a time on both engines: SQLite has one writer anyway, and on
    // PostgreSQL completions arriving while a group commits share the next one (one statement and
    // one commit for all of them instead of one each); a completion arriving while none is in
    // flight commits at once. Measured with 8 workers acknowledging one message at a time: about
    // 0.3 transactions per item instead of 1.1, and faster than one group per connection.
    // The committer's statements stay prepared on the store's own SQLite connections (SQLite
    // compiles every prepareStatement; a caller's pool might close them behind our back).
    this.statements = dialect == Dialect.SQLITE && ownedPool != null ? new StatementCache() : null;
    this.committer = new GroupCommitter(this, new WorkItemRepository(dialect, statements), 1);
    this.renewals = new RenewalBatcher(this, new WorkItemRepository(dialect));
  }

  /**
   * Opens a store on a URL or SQLite file path with the default configuration.
   *
   * @param urlOrPath {@code jdbc:sqlite:...}, {@code jdbc:postgresql://...} or a file path
   * @return the open, migrated store
   * @throws IllegalArgumentException if the URL names an unsupported engine
   * @throws StoreUnavailableException if the database cannot be reached
   * @throws SchemaVersionException if the database schema is newer than this code
   */
  public static TetherStore open(String urlOrPath) {
    return open(urlOrPath, TetherStoreConfig.defaults());
  }

  /**
   * Opens a store on a URL or SQLite file path, creating a HikariCP pool the store owns.
   *
   * @param urlOrPath {@code jdbc:sqlite:...}, {@code jdbc:postgresql://...} or a file path
   * @param config the options
   * @return the open, migrated store
   * @throws IllegalArgumentException if the URL names an unsupported engine
   * @throws StoreUnavailableException if the database cannot be reached
   * @throws SchemaVersionException if the database schema is newer than this code
   */
  public static TetherStore open(String urlOrPath, TetherStoreConfig config) {
    Objects.requireNonNull(urlOrPath, "urlOrPath");
    Objects.requireNonNull(config, "config");
    if (urlOrPath.isBlank()) {
      throw new IllegalArgumentException("urlOrPath must not be blank");
    }
    String url = urlOrPath.regionMatches(true, 0, "jdbc:", 0, 5) ? urlOrPath : "jdbc:sqlite:" + urlOrPath;
    Dialect dialect = Dialect.fromUrl(url);
    HikariConfig hc = new HikariConfig();
    hc.setPoolName("tether-pool-" + POOL_SEQUENCE.incrementAndGet());
    hc.setConnectionTimeout(config.connectionTimeout().toMillis());
    if (dialect == Dialect.SQLITE) {
      SQLiteConfig sc = new SQLiteConfig();
      sc.setJournalMode(SQLiteConfig.JournalMode.WAL);
      sc.setSynchronous(
          config.sqliteSynchronous() == TetherStoreConfig.SqliteSynchronous.FULL
              ? SQLiteConfig.SynchronousMode.FULL
              : SQLiteConfig.SynchronousMode.NORMAL);
      sc.setBusyTimeout((int) Math.min(Integer.MAX_VALUE, config.busyTimeout().toMillis()));
      sc.enforceForeignKeys(true);
      SQLiteDataSource sds = new SQLiteDataSource(sc);
      sds.setUrl(url);
      hc.setDataSource(sds);
      hc.setMaximumPoolSize(
          config.maximumPoolSize() > 0 ? config.maximumPoolSize() : TetherStoreConfig.DEFAULT_SQLITE_POOL_SIZE);
    } else {
      hc.setJdbcUrl(url);
      hc.setMaximumPoolSize(
          config.maximumPoolSize() > 0 ? config.maximumPoolSize() : TetherStoreConfig.DEFAULT_POSTGRES_POOL_SIZE);
    }
    HikariDataSource pool;
    // A new SQLite file switched to WAL by several processes at once can answer SQLITE_BUSY while
    // the pool's first connection applies its pragmas (before the busy timeout is in force):
    // retry within the busy timeout instead of failing the open.
    long busyDeadline = System.nanoTime() + config.busyTimeout().toNanos();
    while (true) {
      try {
        pool = new HikariDataSource(hc);
        break;
      } catch (RuntimeException e) {
        if (dialect == Dialect.SQLITE
            && String.valueOf(e.getMessage()).contains("SQLITE_BUSY")
            && System.nanoTime() - busyDeadline < 0) {
          LOG.debug("SQLite file {} busy while opening the pool; retrying", redact(url));
          try {
            Thread.sleep(20 + java.util.concurrent.ThreadLocalRandom.current().nextInt(30));
          } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            throw new StoreUnavailableException(
                "interrupted while opening a connection pool on " + redact(url), e);
          }
          continue;
        }
        throw new StoreUnavailableException(
            "cannot open a connection pool on " + redact(url) + ": " + e.getMessage()
                + "; check that the database is running and the URL is right", e);
      }
    }
    try {
      return init(pool, pool, dialect, config, redact(url));
    } catch (RuntimeException e) {
      pool.close();
      throw e;
    }
  }

  /**
   * Opens a store on the caller's data source with the default configuration. The engine is
   * detected from the connection metadata.
   *
   * @param dataSource the caller's data source; not closed by {@link #close()}
   * @return the open, migrated store
   * @throws StoreUnavailableException if the database cannot be reached
   * @throws SchemaVersionException if the database schema is newer than this code
   */
  public static TetherStore open(DataSource dataSource) {
    return open(dataSource, TetherStoreConfig.defaults());
  }

  /**
   * Opens a store on the caller's data source.
   *
   * @param dataSource the caller's data source; not closed by {@link #close()}
   * @param config the options (pool settings are ignored)
   * @return the open, migrated store
   * @throws StoreUnavailableException if the database cannot be reached
   * @throws SchemaVersionException if the database schema is newer than this code
   */
  public static TetherStore open(DataSource dataSource, TetherStoreConfig config) {
    Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(config, "config");
    Dialect dialect;
    try (Connection c = dataSource.getConnection()) {
      dialect = Dialect.fromConnection(c);
    } catch (SQLException e) {
      throw translate("opening the caller's data source", e);
    }
    return init(dataSource, null, dialect, config, "caller DataSource " + dataSource.getClass().getName());
  }

  private static TetherStore init(
      DataSource ds, HikariDataSource owned, Dialect dialect, TetherStoreConfig config, String description) {
    TetherStore store = new TetherStore(ds, owned, dialect, config, description);
    try (Connection c = store.borrow()) {
      if (dialect == Dialect.SQLITE && owned == null) {
        try (Statement st = c.createStatement()) {
          st.execute("PRAGMA journal_mode=WAL");
        }
      }
      int before = Migrations.migrate(c, dialect);
      LOG.info(
          "Opened Tether store on {} ({}; schema version {} -> {}; {})",
          description, dialect, before, Migrations.LATEST_VERSION, config);
    } catch (SQLException e) {
      throw translate("migrating the schema of " + description, e);
    }
    return store;
  }

  /**
   * Returns the engine.
   *
   * @return SQLite or PostgreSQL
   */
  public Engine engine() {
    return dialect == Dialect.SQLITE ? Engine.SQLITE : Engine.POSTGRESQL;
  }

  /**
   * Returns the data source (the store's own pool or the caller's).
   *
   * @return the data source
   */
  public DataSource dataSource() {
    return dataSource;
  }

  /**
   * Returns the configuration.
   *
   * @return the configuration
   */
  public TetherStoreConfig config() {
    return config;
  }

  /**
   * Returns whether the store looks usable right now, for readiness probes. It turns false when a
   * call of any of the store's components fails with a store fault: the database cannot be reached
   * or a connection was lost ({@link StoreUnavailableException}), the server is out of resources
   * or reports an I/O error (PostgreSQL SQLState classes 53 and 58), SQLite reports a full, read-
   * only, unreadable or corrupt file; or, on PostgreSQL with notifications on, when the listener's
   * connection is lost. It turns true again when a call that <em>started after</em> the last such
   * fault works, or the listener reconnects; after a write fault (full, read-only, I/O error) only
   * a write counts, since reads keep working on a full disk. Refusals (a stale lease token, a finalized item,
   * invalid input) and constraint errors are not faults. Never blocks and never queries the
   * database: an idle store stays as its last call left it. The transitions are logged once each
   * (WARN when unavailable, INFO when available again).
   *
   * @return false while the store is known to be failing
   */
  public boolean isAvailable() {
    return availability.isAvailable();
  }

  /**
   * Checks the database with one small read (the schema version, from a pooled connection) and
   * returns whether it worked. For a process that makes no store calls of its own between two
   * readiness probes, such as a dashboard without workers: {@link #isAvailable()} only reflects
   * the calls the store made, so an idle store would keep reporting its last state.
   *
   * <p>The probe counts as a store call: when it fails with a store fault the store becomes
   * unavailable, and when it works it ends an outage as any read does (not one that included a
   * write fault: a full disk still answers reads). It blocks while the pool waits for a
   * connection (the store's own pool: {@link TetherStoreConfig#connectionTimeout()}; a caller's
   * data source: its own setting) and, on PostgreSQL, for at most that connection timeout more
   * for the answer (a network timeout on the query, so that a server that stopped answering
   * does not hold the probe until TCP gives up); run it off the thread that answers a readiness
   * probe.
   *
   * @return true if the read worked, false if it failed for any reason (logged at DEBUG; a store
   *     fault is also logged by the availability signal, once per outage)
   * @throws IllegalStateException if the store is closed
   */
  public boolean probe() {
    try { // on a closed store, borrow() throws the IllegalStateException
      return read("probing the store", c -> {
        int before = 0;
        boolean timed = dialect == Dialect.POSTGRES;
        if (timed) {
          before = c.getNetworkTimeout();
          int millis = (int) Math.min(Integer.MAX_VALUE, config.connectionTimeout().toMillis());
          c.setNetworkTimeout(Runnable::run, millis);
        }
        try (Statement st = c.createStatement();
            ResultSet rs = st.executeQuery("SELECT MAX(version) FROM tether_schema_version")) {
          return rs.next();
        } finally {
          if (timed) {
            try {
              c.setNetworkTimeout(Runnable::run, before);
            } catch (SQLException e) { // the connection broke: the pool drops it
              LOG.debug("Could not reset the network timeout of a probed connection", e);
            }
          }
        }
      });
    } catch (TetherStoreException e) {
      LOG.debug("Probe of the Tether store on {} failed", description, e);
      return false;
    }
  }

  StoreAvailability availability() {
    return availability;
  }

  /**
   * Returns whether {@link #close()} was called.
   *
   * @return true once closed
   */
  public boolean isClosed() {
    return closed.get();
  }

  /** Closes the pool the store created, if any; idempotent. A caller's data source stays open. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      signalItems();
      NotificationListener l = listener;
      if (l != null) {
        l.stop();
      }
      if (ownedPool != null) {
        ownedPool.close();
      }
      if (statements != null) {
        // after the pool: closing its connections finalized them; this drops what is left
        statements.clear();
      }
      LOG.info("Closed Tether store on {}", description);
    }
  }

  @Override
  public String toString() {
    return "TetherStore[" + description + ", " + dialect + "]";
  }

  // ---- package-private plumbing for the store's components ----

  Dialect dialect() {
    return dialect;
  }

  Clock effectiveClock(Clock componentClock) {
    return componentClock != null ? componentClock : config.clock().orElse(null);
  }

  /** Returns "now" by the component's clock, else the database clock (PG) or system clock. */
  Instant now(Connection c, Clock clock) throws SQLException {
    if (clock != null) {
      return Dialect.truncate(clock.instant());
    }
    if (dialect == Dialect.POSTGRES) {
      return dialect.databaseNow(c);
    }
    return Dialect.truncate(Instant.now());
  }

  /** The group committer's statement cache, or null (tests). */
  StatementCache statements() {
    return statements;
  }

  /** The store's group committer (tests). */
  GroupCommitter committer() {
    return committer;
  }

  /** Records the delivery budget and capacity of a mailbox's queue, for replies sent to it. */
  void registerQueue(String queue, int maxAttempts, int capacity) {
    queueSettings.put(queue, new int[] {maxAttempts, capacity});
  }

  /** Returns {maxAttempts, capacity} registered for {@code queue}. */
  Optional<int[]> queueSettings(String queue) {
    return Optional.ofNullable(queueSettings.get(queue));
  }

  /**
   * Acquires for {@code holder}: on PostgreSQL with group commit on, no filters and the database
   * clock, in the group committer's next group (one statement with concurrent completions, one
   * commit for all; the full acquisition in a transaction of its own when the queue holds
   * expired leases or due scheduled items); else on PostgreSQL first as one auto-committed
   * statement (one round trip, the database clock read inside it), falling back to the full
   * transaction when the request filters or the queue holds expired leases or due scheduled
   * items; on SQLite with group commit on, in the group
   * committer's next transaction (fused with concurrent completions), else in a transaction of
   * its own.
   */
  List<Lease> acquire(
      String what, WorkItemRepository repo, AcquireRequest request, String holder, Clock clock) {
    boolean unfiltered = request.workType() == null && request.taskId() == null;
    if (dialect == Dialect.POSTGRES && unfiltered && clock == null && config.groupCommit()) {
      return committer.acquire(request, holder, null);
    }
    if (dialect == Dialect.POSTGRES && unfiltered) {
      Optional<List<Lease>> fast = writeOneStatement(what,
          c -> repo.acquireFastPostgres(c, request, holder, clock == null ? null : now(c, clock)));
      if (fast.isPresent()) {
        return fast.get();
      }
    }
    if (dialect == Dialect.SQLITE && config.groupCommit()) {
      // One writer at a time anyway: share the transaction (and its commit) of the next group.
      return committer.acquire(request, holder, clock);
    }
    return write(what, c -> repo.acquire(c, request, holder, now(c, clock), null));
  }

  /**
   * Completes a leased item durably: through the group committer when group commit is on, else
   * in a transaction of its own.
   */
  void complete(WorkItemRepository repo, long id, long token, byte[] output, Clock clock) {
    if (config.groupCommit()) {
      committer.complete(id, token, output, clock);
    } else {
      write("completing item " + id, c -> {
        repo.complete(c, id, token, output, now(c, clock));
        return null;
      });
    }
  }

  /** Wakes receivers waiting in this process (new items may be available). */
  /**
   * Completes several leased items durably, in shared transactions even with group commit off;
   * each is applied or refused on its own. Returns, in order, null or the refusal of each.
   */
  List<RuntimeException> completeAll(List<long[]> idsAndTokens, Clock clock) {
    return committer.completeAll(idsAndTokens, clock);
  }

  /**
   * Renews a lease durably: batched with renewals due at the same time when group commit is on,
   * else in a transaction of its own. Returns the new expiry.
   */
  Instant renew(WorkItemRepository repo, long id, long token, java.time.Duration duration, Clock clock) {
    if (config.groupCommit()) {
      return renewals.renew(id, token, duration, clock);
    }
    return write("renewing the lease of item " + id,
        c -> repo.renew(c, id, token, now(c, clock), duration));
  }

  /** Wakes receivers waiting in this process (new items may be available). */
  void signalItems() {
    synchronized (itemsSignal) {
      itemsGeneration++;
      itemsSignal.notifyAll();
    }
  }

  /**
   * Returns the count of {@link #signalItems()} calls so far; read before looking for items and
   * pass to {@link #awaitItems(long, long)} so that a signal in between is not missed.
   */
  long itemsGeneration() {
    synchronized (itemsSignal) {
      return itemsGeneration;
    }
  }

  /** Waits up to {@code millis} for {@link #signalItems()}; returns false if interrupted. */
  boolean awaitItems(long millis) {
    return awaitItems(itemsGeneration(), millis);
  }

  /**
   * Waits up to {@code millis} for a signal after generation {@code seen} (returns at once if
   * one came already); on PostgreSQL with notifications on, starts this store's listener first,
   * so that enqueues of other processes signal too. Returns false if interrupted.
   */
  boolean awaitItems(long seen, long millis) {
    if (millis <= 0) {
      return true;
    }
    ensureListener();
    synchronized (itemsSignal) {
      if (itemsGeneration != seen) {
        return true;
      }
      try {
        itemsSignal.wait(millis);
        return true;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
  }

  /** The channel enqueues notify and receivers listen on (PostgreSQL). */
  static final String CHANNEL = "tether_items";

  boolean usesNotifications() {
    return dialect == Dialect.POSTGRES && config.notifications();
  }

  /**
   * Inside an enqueue's transaction: tells listening stores of other processes that items may
   * be available once it commits (PostgreSQL {@code NOTIFY}, delivered at commit, dropped on
   * rollback). Does nothing on SQLite or with notifications off.
   */
  void notifyItems(Connection c) throws SQLException {
    if (usesNotifications()) {
      try (Statement st = c.createStatement()) {
        st.execute("NOTIFY " + CHANNEL);
      }
    }
  }

  /** The channel an enqueue notifies inside its own statement, or null (SQLite, notifications off). */
  String notificationChannel() {
    return usesNotifications() ? CHANNEL : null;
  }

  private void ensureListener() {
    if (!usesNotifications() || listener != null || closed.get()) {
      return;
    }
    synchronized (itemsSignal) {
      if (listener == null) {
        NotificationListener l = new NotificationListener(this, description);
        listener = l;
        l.start();
      }
    }
  }

  /** Opens the listener's own connection (not from the pool: it is held for the store's life). */
  Connection openListenerConnection() throws SQLException {
    if (ownedPool != null) {
      return java.sql.DriverManager.getConnection(
          ownedPool.getJdbcUrl(), ownedPool.getUsername(), ownedPool.getPassword());
    }
    return dataSource.getConnection();
  }

  Connection borrow() throws SQLException {
    if (closed.get()) {
      throw new IllegalStateException("the Tether store on " + description + " is closed");
    }
    Connection c = dataSource.getConnection();
    if (dialect == Dialect.SQLITE && ownedPool == null) {
      // A caller's SQLite connections get the busy timeout, and auto-commit so that the store's
      // explicit BEGIN IMMEDIATE starts the transaction.
      try (Statement st = c.createStatement()) {
        if (!c.getAutoCommit()) {
          c.setAutoCommit(true);
        }
        st.execute("PRAGMA busy_timeout=" + config.busyTimeout().toMillis());
      } catch (SQLException e) {
        c.close();
        throw e;
      }
    }
    return c;
  }

  /**
   * Runs {@code work} in a write transaction: committed if it returns, rolled back if it throws.
   * A transaction the database aborted as a deadlock victim or serialization failure (SQLState
   * 40P01 / 40001) is rolled back and run again, up to {@value #WRITE_ATTEMPTS} times in all.
   */
  <T> T write(String what, SqlWork<T> work) {
    for (int attempt = 1; ; attempt++) {
      try {
        return writeOnce(what, work);
      } catch (TetherStoreException e) {
        if (attempt >= WRITE_ATTEMPTS || !isRetryableAbort(e.getCause())) {
          throw e;
        }
        LOG.debug("Retrying a write aborted by the database ({}), attempt {}", what, attempt + 1, e);
      }
    }
  }

  /**
   * Runs a write that is one statement (plus reads) in auto-commit mode: one round trip fewer
   * than {@link #write} (no separate COMMIT), still atomic and, when it returns, durable.
   * Retried like {@link #write} when the database aborts it (deadlock, serialization). Only for
   * work whose single write statement is the whole change.
   */
  <T> T writeOneStatement(String what, SqlWork<T> work) {
    for (int attempt = 1; ; attempt++) {
      long ticket = availability.begin();
      try (Connection c = borrow()) {
        if (!c.getAutoCommit()) {
          c.setAutoCommit(true);
        }
        T result = work.run(c);
        availability.succeeded(ticket, true);
        return result;
      } catch (SQLException e) {
        if (attempt >= WRITE_ATTEMPTS || !isRetryableAbort(e)) {
          throw failed(what, e);
        }
        LOG.debug("Retrying a write aborted by the database ({}), attempt {}", what, attempt + 1, e);
      }
    }
  }

  private static final int WRITE_ATTEMPTS = 3;

  private static boolean isRetryableAbort(Throwable t) {
    if (t instanceof SQLException) {
      String state = ((SQLException) t).getSQLState();
      return "40P01".equals(state) || "40001".equals(state);
    }
    return false;
  }

  private <T> T writeOnce(String what, SqlWork<T> work) {
    boolean sqlite = dialect == Dialect.SQLITE;
    if (sqlite) {
      writerLock.lock();
    }
    long ticket = availability.begin();
    try (Connection c = borrow()) {
      if (sqlite) {
        try (StatementCache.Stmt st = StatementCache.prepare(statements, c, "BEGIN IMMEDIATE")) {
          st.ps().execute();
        } catch (SQLException e) {
          invalidateStatements(c);
          throw e;
        }
      } else {
        c.setAutoCommit(false);
      }
      boolean committed = false;
      try {
        T result = work.run(c);
        if (sqlite) {
          try (StatementCache.Stmt st = StatementCache.prepare(statements, c, "COMMIT")) {
            st.ps().execute();
          }
        } else {
          c.commit();
        }
        committed = true;
        availability.succeeded(ticket, true);
        return result;
      } finally {
        if (!committed) {
          rollbackQuietly(c, sqlite);
          invalidateStatements(c);
        }
        if (!sqlite) {
          try {
            c.setAutoCommit(true);
          } catch (SQLException e) {
            LOG.debug("Could not reset auto-commit on a pooled connection", e);
          }
        }
      }
    } catch (SQLException e) {
      throw failed(what, e);
    } finally {
      if (sqlite) {
        writerLock.unlock();
      }
    }
  }

  /** A transaction on {@code c} failed: its cached statements may be finalized or mid-step. */
  private void invalidateStatements(Connection c) {
    if (statements != null) {
      statements.invalidate(c);
    }
  }

  /** Runs {@code work} on a connection in auto-commit mode (reads). */
  <T> T read(String what, SqlWork<T> work) {
    long ticket = availability.begin();
    try (Connection c = borrow()) {
      T result = work.run(c);
      availability.succeeded(ticket, false);
      return result;
    } catch (SQLException e) {
      throw failed(what, e);
    }
  }

  /** Translates a failed call's exception, marking the store unavailable if it is a store fault. */
  private TetherStoreException failed(String what, SQLException e) {
    if (isStoreFault(e)) {
      availability.failed(what, e, !isConnectivity(e));
    }
    return translate(what, e);
  }

  /** The notification listener lost its connection (PostgreSQL): a store fault. */
  void listenerLost(Throwable cause) {
    availability.failed("listening for enqueue notifications", cause, false);
  }

  /** The notification listener connected; {@code ticket} is from before it began to connect. */
  void listenerConnected(long ticket) {
    availability.succeeded(ticket, false);
  }

  /**
   * Whether {@code e} says the database is not usable (rather than refusing one statement):
   * connectivity as in {@link #isConnectivity}; PostgreSQL insufficient resources (class 53: disk
   * full, out of memory, too many connections), system errors (class 58: I/O) and corruption
   * (XX001, XX002); SQLite read-only, I/O error, corrupt, full, cannot open, not a database.
   */
  static boolean isStoreFault(SQLException e) {
    if (isConnectivity(e)) {
      return true;
    }
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (!(t instanceof SQLException)) {
        continue;
      }
      SQLException s = (SQLException) t;
      String state = s.getSQLState();
      if (state != null && (state.startsWith("53") || state.startsWith("58")
          || "XX001".equals(state) || "XX002".equals(state))) {
        return true;
      }
      if (t instanceof org.sqlite.SQLiteException) {
        switch (((org.sqlite.SQLiteException) t).getResultCode().code & 0xff) {
          case 8: // SQLITE_READONLY
          case 10: // SQLITE_IOERR
          case 11: // SQLITE_CORRUPT
          case 13: // SQLITE_FULL
          case 14: // SQLITE_CANTOPEN
          case 26: // SQLITE_NOTADB
            return true;
          default:
            break;
        }
      }
    }
    return false;
  }

  private static void rollbackQuietly(Connection c, boolean sqlite) {
    try {
      if (sqlite) {
        try (Statement st = c.createStatement()) {
          st.execute("ROLLBACK");
        }
      } else {
        c.rollback();
      }
    } catch (SQLException e) {
      LOG.debug("Rollback failed (the transaction may already be gone)", e);
    }
  }

  static TetherStoreException translate(String what, SQLException e) {
    if (isConnectivity(e)) {
      return new StoreUnavailableException(
          "cannot reach the database while "
              + what
              + ": "
              + e.getMessage()
              + " (SQLState "
              + e.getSQLState()
              + "); the transaction was rolled back, retry with backoff",
          e);
    }
    return new TetherStoreException(
        "database error while " + what + ": " + e.getMessage() + " (SQLState " + e.getSQLState() + ")",
        e);
  }

  static boolean isConnectivity(SQLException e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLTransientConnectionException
          || t instanceof SQLNonTransientConnectionException
          || t instanceof SQLRecoverableException) {
        return true;
      }
      if (t instanceof SQLException) {
        String state = ((SQLException) t).getSQLState();
        // 08: connection exceptions; 57P: the server is shutting down, restarting or starting
        // up (57P01 "terminating connection due to administrator command" on a restart).
        if (state != null && (state.startsWith("08") || state.startsWith("57P"))) {
          return true;
        }
        String msg = t.getMessage();
        if (msg != null && msg.toLowerCase(Locale.ROOT).contains("sqlite_busy")) {
          return true;
        }
      }
    }
    return false;
  }

  private static String redact(String url) {
    return url.replaceAll("(?i)(password=)[^&;]*", "$1***");
  }
}
