package dev.tether.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
  // The store keeps connections, write transactions and their retries, the availability signal
  // and the wake-ups of waiting receivers. What differs between SQLite and PostgreSQL is its
  // StoreEngine's; the SQL is in the pieces of StoreSql.
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
  private final StoreEngine engine;
  private final TetherStoreConfig config;
  private final String description;
  private final Object listenerLock = new Object();
  private final Map<String, QueueSettings> queueSettings = new ConcurrentHashMap<>();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final StoreSql sql;
  private final GroupCommitter committer;
  private final RenewalBatcher renewals;
  private final StoreAvailability availability;
  private final Wakeups wakeups = new Wakeups();
  /** When this store last asked its listener for a slot of each queue (System.nanoTime()). */
  private final Map<String, Long> slotAsks = new ConcurrentHashMap<>();
  private final CancelWatch cancelWatch = new CancelWatch(this);
  private volatile NotificationListener listener;
  /** On PostgreSQL with notifications, who an enqueue wakes ({@link WakeRoster}); else null. */
  private volatile WakeRoster roster;
  /** On a caller's data source, the schema each borrowed connection is switched to; else null. */
  private final String switchedSchema;

  private TetherStore(
      DataSource dataSource,
      HikariDataSource ownedPool,
      StoreEngine engine,
      TetherStoreConfig config,
      String description) {
    this.dataSource = dataSource;
    this.ownedPool = ownedPool;
    this.engine = engine;
    this.config = config;
    this.description = description;
    this.switchedSchema = ownedPool == null ? config.schema().orElse(null) : null;
    this.availability = new StoreAvailability(description, dev.tether.Ticker.system());
    this.sql = StoreSql.of(engine, Statements.FRESH);
    // Groups in flight: one on SQLite (one writer anyway); up to two on PostgreSQL, the second
    // only once GroupCommitter.MIN_PARALLEL_GROUP members are queued for it, so that one group's
    // statement runs while the other's commit waits for its WAL flush (the deferred drain's
    // median about a fifth faster; parallel groups of one or two slowed single-item workers:
    // docs/PERFORMANCE.md, "Two groups in flight"). Members arriving meanwhile share the next
    // group (one statement and one commit for all of them), which beat one group per connection;
    // a completion arriving while no group is in flight commits at once.
    this.committer = new GroupCommitter(this, StoreSql.of(engine, engine.groupStatements()),
        engine.kind() == Engine.POSTGRESQL ? 2 : 1);
    this.renewals = new RenewalBatcher(this, sql.batches());
  }

  /** A URL with a scheme of its own ({@code postgres://...}), not {@code jdbc:} and not a path. */
  private static final java.util.regex.Pattern NON_JDBC_URL =
      java.util.regex.Pattern.compile("([A-Za-z][A-Za-z0-9+.-]*)://");

  /**
   * Opens a store on a URL or SQLite file path with the default configuration.
   *
   * @param urlOrPath {@code jdbc:sqlite:...}, {@code jdbc:postgresql://...} or a file path
   * @return the open, migrated store
   * @throws IllegalArgumentException if the URL names an unsupported engine, or is a URL of
   *     another form ({@code postgres://...})
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
   * @throws IllegalArgumentException if the URL names an unsupported engine, or is a URL of
   *     another form ({@code postgres://...})
   * @throws StoreUnavailableException if the database cannot be reached
   * @throws SchemaVersionException if the database schema is newer than this code
   */
  public static TetherStore open(String urlOrPath, TetherStoreConfig config) {
    Objects.requireNonNull(urlOrPath, "urlOrPath");
    Objects.requireNonNull(config, "config");
    if (urlOrPath.isBlank()) {
      throw new IllegalArgumentException("urlOrPath must not be blank");
    }
    java.util.regex.Matcher scheme = NON_JDBC_URL.matcher(urlOrPath);
    if (!urlOrPath.regionMatches(true, 0, "jdbc:", 0, 5) && scheme.lookingAt()
        && !scheme.group(1).equalsIgnoreCase("file")) { // SQLite takes file: URIs
      // postgres://host/db (a DATABASE_URL, say) would otherwise be taken for a file path
      throw new IllegalArgumentException("not a JDBC URL or a file path: " + redact(urlOrPath)
          + "; give a JDBC URL such as jdbc:postgresql://host:5432/db?user=name (a "
          + scheme.group(1) + ":// URL's user and password go in its user= and password="
          + " parameters)");
    }
    String url = urlOrPath.regionMatches(true, 0, "jdbc:", 0, 5) ? urlOrPath : "jdbc:sqlite:" + urlOrPath;
    StoreEngine engine = StoreEngine.forUrl(url, config);
    HikariConfig hc = new HikariConfig();
    hc.setPoolName("tether-pool-" + POOL_SEQUENCE.incrementAndGet());
    hc.setConnectionTimeout(config.connectionTimeout().toMillis());
    engine.configurePool(hc, url);
    HikariDataSource pool;
    long busyDeadline = System.nanoTime() + config.busyTimeout().toNanos();
    while (true) {
      try {
        pool = new HikariDataSource(hc);
        break;
      } catch (RuntimeException e) {
        // Retried within the busy timeout when the engine says another try may work (a new
        // SQLite file switched to WAL by several processes at once).
        if (engine.retryOpen(e) && System.nanoTime() - busyDeadline < 0) {
          LOG.debug("Database {} busy while opening the pool; retrying", redact(url));
          try {
            Thread.sleep(20 + ThreadLocalRandom.current().nextInt(30));
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
      return init(pool, pool, engine, config, redact(url));
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
   * Opens a store on the caller's data source. On PostgreSQL, when {@code config} names no schema
   * and the data source is (or wraps) a HikariCP pool that does not auto-commit and sets a schema,
   * the store takes that schema as its own: such a pool sets it inside a transaction that a
   * rollback undoes, which would leave the store's tables wherever the server's {@code
   * search_path} points (see {@link TetherStoreConfig#schema()}; the log says which schema it
   * took and why).
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
    StoreEngine engine;
    try (Connection c = dataSource.getConnection()) {
      engine = StoreEngine.forConnection(c, config);
      if (engine.kind() == Engine.POSTGRESQL) {
        TetherStoreConfig adopted = adoptPoolSchema(dataSource, c, config);
        if (adopted != config) {
          config = adopted;
          engine = StoreEngine.forConnection(c, config);
        }
      }
    } catch (SQLException e) {
      TetherStoreException translated =
          StoreErrors.translateBeforeDetection("opening the caller's data source", e);
      if (translated instanceof StoreUnavailableException) {
        // nothing was written yet: the advice is where the data source points, not a retry
        throw new StoreUnavailableException("cannot open the Tether store on the caller's data"
            + " source " + dataSource.getClass().getName() + ": " + e.getMessage() + " (SQLState "
            + e.getSQLState() + "); check that the database is running and the data source's URL"
            + " is right", e);
      }
      throw translated;
    }
    return init(dataSource, null, engine, config, "caller DataSource " + dataSource.getClass().getName());
  }

  /** How each log line of {@link #adoptPoolSchema} begins; its one argument is the pool's schema. */
  private static final String POOL_SCHEMA =
      "The caller's HikariCP pool sets schema '{}' without auto-commit, where a rollback undoes it";

  /**
   * {@code config} with the schema of a caller's HikariCP pool that does not auto-commit, when
   * {@code config} names none; else {@code config} itself. Such a pool sets its schema on each new
   * connection with a {@code SET} inside the transaction that not auto-committing leaves open,
   * and the first rollback on that connection undoes it: the store's tables would be created, and
   * its statements run, in whatever {@code search_path} the server gives (usually {@code public}).
   * As the store's schema it is set on each connection the store borrows instead (three statements
   * more per use). When Tether's tables are in the connections' schema without the pool's setting
   * and not in the pool's (a store ran there before this rule, or another application's does),
   * that schema is the store's, with a warning, so that no item is stranded; when both hold them,
   * the pool's, with a warning. A name with capitals is not adopted (Tether names schemas
   * unquoted), with a warning.
   *
   * @param c a connection of {@code dataSource}, for looking up where Tether's tables are
   */
  static TetherStoreConfig adoptPoolSchema(DataSource dataSource, Connection c, TetherStoreConfig config)
      throws SQLException {
    if (config.schema().isPresent()) {
      return config;
    }
    HikariDataSource pool;
    try {
      if (dataSource instanceof HikariDataSource) {
        pool = (HikariDataSource) dataSource;
      } else if (dataSource.isWrapperFor(HikariDataSource.class)) {
        pool = dataSource.unwrap(HikariDataSource.class);
      } else {
        return config;
      }
    } catch (SQLException e) {
      return config; // a wrapper that cannot say: nothing to adopt
    }
    String schema = pool.getSchema();
    if (schema == null || schema.isBlank() || pool.isAutoCommit()) {
      return config;
    }
    String before = defaultSchema(c);
    String use = schema;
    if (before != null && !before.equals(schema) && hasTetherTables(c, before)) {
      if (!hasTetherTables(c, schema)) {
        // a store ran here before this rule (or another application's does): its items stay seen
        LOG.warn(POOL_SCHEMA + "; Tether's tables are in '{}' (the connections' schema without that"
            + " setting), not in '{}', so Tether uses '{}'. To choose, set TetherStoreConfig.schema"
            + " (tether.store.schema)",
            schema, before, schema, before);
        use = before;
      } else {
        LOG.warn(POOL_SCHEMA + "; Tether's tables are in both '{}' and '{}' and Tether uses '{}': items"
            + " in '{}' are not seen. To choose, set TetherStoreConfig.schema (tether.store.schema)",
            schema, schema, before, schema, before);
      }
    }
    if (!use.equals(use.toLowerCase(Locale.ROOT))) {
      // Tether names its schema unquoted, which PostgreSQL folds to lower case: another schema
      LOG.warn(POOL_SCHEMA + ", and Tether cannot name '{}' (it names schemas unquoted, in lower"
          + " case): set TetherStoreConfig.schema (tether.store.schema)", schema, use);
      return config;
    }
    try {
      TetherStoreConfig adopted = config.toBuilder().schema(use).build();
      LOG.info(POOL_SCHEMA + ": Tether uses schema '{}' and sets it on each connection it borrows",
          schema, use);
      return adopted;
    } catch (IllegalArgumentException e) {
      LOG.warn(POOL_SCHEMA + ", and Tether cannot name '{}' as its schema ({}): set"
          + " TetherStoreConfig.schema (tether.store.schema)", schema, use, e.getMessage());
      return config;
    }
  }

  private static TetherStore init(
      DataSource ds, HikariDataSource owned, StoreEngine engine, TetherStoreConfig config, String description) {
    TetherStore store = new TetherStore(ds, owned, engine, config, description);
    try (Connection c = store.borrow()) {
      engine.initialize(c);
      if (engine.notifies()) {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT current_schema()")) {
          rs.next();
          store.roster = new WakeRoster(String.valueOf(rs.getString(1)));
          engine.broadcastOn(store.roster.broadcastChannel());
        }
      }
      int before = Migrations.prepare(c, engine, config.migration());
      LOG.info(
          "Opened Tether store on {} ({}; schema version {}; {})",
          description, engine,
          before < 0 ? "not checked" : before == Migrations.LATEST_VERSION ? Integer.toString(before)
              : before + " -> " + Migrations.LATEST_VERSION,
          config);
    } catch (SQLException e) {
      throw store.translate("migrating the schema of " + description, e);
    }
    return store;
  }

  /**
   * Returns the engine.
   *
   * @return SQLite or PostgreSQL
   */
  public Engine engine() {
    return engine.kind();
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
      return read("probing the store", c -> engine.boundedRead(c, config.connectionTimeout(), conn -> {
        try (Statement st = conn.createStatement();
            ResultSet rs = st.executeQuery("SELECT MAX(version) FROM tether_schema_version")) {
          return rs.next();
        }
      }));
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
      wakeAllReceivers();
      cancelWatch.stop();
      NotificationListener l = listener;
      if (l != null) {
        l.stop();
      }
      if (ownedPool != null) {
        ownedPool.close();
      }
      engine.close();
      LOG.info("Closed Tether store on {}", description);
    }
  }

  @Override
  public String toString() {
    return "TetherStore[" + description + ", " + engine + "]";
  }

  // ---- package-private plumbing for the store's components ----

  /** The engine: everything that differs between SQLite and PostgreSQL. */
  StoreEngine storeEngine() {
    return engine;
  }

  /** The SQL pieces, preparing their statements afresh. */
  StoreSql sql() {
    return sql;
  }

  Clock effectiveClock(Clock componentClock) {
    return componentClock != null ? componentClock : config.clock().orElse(null);
  }

  /** Returns "now" by the component's clock, else by the engine's (the database's, or the system's). */
  Instant now(Connection c, Clock clock) throws SQLException {
    if (clock != null) {
      return clock.instant().truncatedTo(ChronoUnit.MILLIS);
    }
    return engine.now(c);
  }

  /** The store's group committer (tests). */
  GroupCommitter committer() {
    return committer;
  }

  /** The delivery budget and capacity of a mailbox's queue, for replies sent to it. */
  record QueueSettings(int maxAttempts, int capacity) {}

  /** Records the delivery budget and capacity of a mailbox's queue, for replies sent to it. */
  void registerQueue(String queue, int maxAttempts, int capacity) {
    queueSettings.put(queue, new QueueSettings(maxAttempts, capacity));
  }

  /**
   * The schema a connection's tables would be created in without any {@code SET} of its session:
   * the first existing schema of its default {@code search_path} ({@code $user} being the current
   * user), or null.
   */
  private static String defaultSchema(Connection c) throws SQLException {
    String path;
    String user;
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT (SELECT reset_val FROM pg_settings WHERE name = 'search_path'),"
            + " current_user")) {
      rs.next();
      path = rs.getString(1);
      user = rs.getString(2);
    }
    if (path == null) {
      return null;
    }
    for (String part : path.split(",")) {
      String name = part.trim();
      if (name.length() >= 2 && name.startsWith("\"") && name.endsWith("\"")) {
        name = name.substring(1, name.length() - 1).replace("\"\"", "\"");
      } else {
        name = name.toLowerCase(Locale.ROOT); // unquoted: folded, as PostgreSQL does
      }
      if (name.equals("$user")) {
        name = user;
      }
      if (name.isEmpty()) {
        continue;
      }
      try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM pg_namespace WHERE nspname = ?")) {
        ps.setString(1, name);
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            return name;
          }
        }
      }
    }
    return null;
  }

  /** Whether {@code schema} holds Tether's tables (its schema version table). */
  private static boolean hasTetherTables(Connection c, String schema) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM pg_class t JOIN pg_namespace n"
        + " ON n.oid = t.relnamespace WHERE n.nspname = ? AND t.relname = 'tether_schema_version'")) {
      ps.setString(1, schema);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /** Returns the settings registered for {@code queue}. */
  Optional<QueueSettings> queueSettings(String queue) {
    return Optional.ofNullable(queueSettings.get(queue));
  }

  /**
   * Runs {@code work} on a caller's connection inside the caller's transaction, switched to the
   * store's schema when the store has one on a caller's data source.
   */
  <T> T onCallerConnection(Connection c, SqlWork<T> work) throws SQLException {
    return switchedSchema == null ? work.run(c) : SchemaSwitch.within(c, engine, switchedSchema, work);
  }

  /** Enqueues one item durably, as the engine runs it best ({@link StoreEngine#enqueue}). */
  long enqueue(String what, NewWorkItem item, Clock clock) {
    return engine.enqueue(this, what, item, clock);
  }

  /** Enqueues one item in a write transaction of its own, notifying listeners at commit. */
  long insertInTransaction(String what, NewWorkItem item, Clock clock) {
    return write(what, c -> {
      long id = sql.inserts().insert(c, item, now(c, clock));
      notifyItems(c, item.queue(), 1);
      return id;
    });
  }

  /** Acquires for {@code holder}, as the engine runs it best ({@link StoreEngine#acquire}). */
  List<Lease> acquire(String what, AcquireRequest request, String holder, Clock clock) {
    return engine.acquire(this, what, request, holder, clock);
  }

  /** The full acquisition in a write transaction of its own. */
  List<Lease> acquireInTransaction(String what, AcquireRequest request, String holder, Clock clock) {
    return write(what, c -> sql.acquisitions().acquire(c, request, holder, now(c, clock)));
  }

  /**
   * Completes a leased item durably: through the group committer when group commit is on, else
   * in a transaction of its own.
   */
  void complete(long id, long token, byte[] output, Clock clock) {
    if (config.groupCommit()) {
      committer.complete(id, token, output, clock);
    } else {
      write("completing item " + id, c -> {
        sql.leases().complete(c, id, token, output, now(c, clock));
        return null;
      });
    }
  }

  /**
   * Completes several leased items durably, in shared transactions even with group commit off;
   * each is applied or refused on its own. Returns, in order, null or the refusal of each.
   */
  List<RuntimeException> completeAll(List<LeaseKey> leases, Clock clock) {
    return committer.completeAll(leases, clock);
  }

  /** The batcher of lease renewals (tests). */
  RenewalBatcher renewalBatcher() {
    return renewals;
  }

  /**
   * Renews a lease durably, with the delivery's latest output when given: batched with renewals
   * due at the same time when group commit is on, else in a transaction of its own. Returns the
   * new expiry.
   */
  Instant renew(long id, long token, Duration duration, Clock clock,
      dev.tether.mailbox.OutputTail output) {
    if (config.groupCommit()) {
      return renewals.renew(id, token, duration, clock, output);
    }
    return write("renewing the lease of item " + id, c -> {
      Instant now = now(c, clock);
      Instant expiry = sql.leases().renew(c, id, token, now, duration);
      if (output != null) {
        sql.leases().recordOutput(c, id, token, output, now);
      }
      return expiry;
    });
  }

  /** Wakes one waiting receiver of each queue in this process (new items may be available). */
  void signalItems() {
    wakeups.signal();
  }

  /** Wakes every waiting receiver of this process (a mailbox or the store closing). */
  void wakeAllReceivers() {
    wakeups.wakeAll();
  }

  /**
   * A receiver is about to wait for {@code queue}: when this store's listener holds no wake-up
   * slot of the queue ({@link WakeRoster}), asks it to take one now ({@link
   * NotificationListener#ask}), since until it does other processes' enqueues of the queue wake
   * nobody here, and on its own it checks only every half second. While the listener is
   * listening the ask is one {@code NOTIFY} on a channel only it hears, on a connection of the
   * pool (a receive on a pool with no free connection waits for one, as its looks do); while it
   * is not (starting, or reconnecting to a database that went away) nothing is sent and it takes
   * the slot once it listens again. At most one ask per queue every {@value #SLOT_ASK_MILLIS} ms
   * while the slot is missing (a queue whose every slot is taken costs one per interval); a map
   * read otherwise. A failed {@code NOTIFY} is logged at debug: the listener's periodic check
   * takes the slot.
   */
  void beforeWait(String queue) {
    NotificationListener l = listener;
    WakeRoster r = roster;
    if (l == null || r == null || r.ownSlot(queue) >= 0) {
      return;
    }
    long now = System.nanoTime();
    boolean[] due = {false};
    slotAsks.compute(queue, (q, last) -> {
      if (last != null && now - last < SLOT_ASK_MILLIS * 1_000_000L) {
        return last;
      }
      due[0] = true;
      return now;
    });
    if (!due[0]) {
      return;
    }
    if (slotAsks.size() > 1024) {
      slotAsks.clear();
    }
    if (!l.ask(queue)) {
      return; // not listening: it takes the slot when it is
    }
    try (Connection c = dataSource.getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      engine.notifyItems(c, new String[] {l.wakeChannel()}, "");
    } catch (SQLException | RuntimeException e) {
      LOG.debug("Could not ask the listener of {} for a wake-up slot of queue '{}' ({}); it takes"
          + " one at its next check", description, queue, e.toString());
    }
  }

  private static final long SLOT_ASK_MILLIS = 10_000;

  /** The notification listener, or null before the first wait or where the engine does not notify (for tests). */
  NotificationListener listener() {
    return listener;
  }

  /** The receivers' shared wake-ups. */
  Wakeups wakeups() {
    ensureListener();
    return wakeups;
  }

  /**
   * Returns how often a waiting receive of this store looks at the database without a wake-up:
   * 3 s on PostgreSQL with notifications on (an enqueue wakes receivers of a few processes, and a
   * waiting receiver knows when the next delayed item or lease of its queue comes due; the look
   * finds leases that other processes took since), else 100 ms (SQLite hears no other process's
   * enqueue).
   *
   * @return the poll interval
   */
  public Duration defaultPollInterval() {
    return engine.defaultPollInterval();
  }

  boolean usesNotifications() {
    return engine.notifies();
  }

  /** The engine, for the listener's passed-on wake-ups. */
  StoreEngine engineForListener() {
    return engine;
  }

  /** Who wakes whom on PostgreSQL with notifications, else null. */
  WakeRoster roster() {
    return roster;
  }

  /**
   * The channels an enqueue of {@code items} items of {@code queue} notifies: a few listeners of
   * other processes waiting for the queue ({@link WakeRoster#targets}); none where the engine does
   * not notify.
   */
  String[] wakeTargets(Connection c, String queue, int items) throws SQLException {
    WakeRoster r = roster;
    return r == null ? new String[0] : r.targets(c, queue, items);
  }

  /**
   * Inside a transaction that made items available on a queue it does not know (a redrive by
   * id): tells every listening store of the schema once it commits. Does nothing where the
   * engine does not notify.
   */
  void notifyItems(Connection c) throws SQLException {
    notifyItems(c, null, 1);
  }

  /**
   * Inside an enqueue's transaction: tells listening stores of other processes that {@code items}
   * items of {@code queue} may be available once it commits: a few of those waiting for the
   * queue, more for more items ({@link WakeRoster#targets}); every listening store when {@code
   * queue} is null.
   */
  void notifyItems(Connection c, String queue, int items) throws SQLException {
    WakeRoster r = roster;
    if (queue == null || r == null) {
      engine.notifyEveryone(c, queue);
    } else {
      engine.notifyItems(c, r.targets(c, queue, items), WakeRoster.payload(0, queue));
    }
  }

  /**
   * One read-only look at a queue for a waiting receiver ({@link StoreEngine#probe}), or null
   * where the engine has none.
   */
  QueueProbe probe(String queue, Clock clock) {
    if (engine.kind() == Engine.SQLITE) {
      return null;
    }
    return read("looking at queue '" + queue + "'", c -> {
      QueueProbe p = engine.probe(c, queue, clock == null ? null : now(c, clock));
      // due times are real milliseconds only on the database's clock
      return p == null || clock == null ? p : new QueueProbe(p.ready(), -1);
    });
  }

  /** Tells this process's lease holders of cancellations ({@link CancelWatch}). */
  CancelWatch cancelWatch() {
    return cancelWatch;
  }

  /** Starts the notification listener if the engine notifies and it is not running yet. */
  void ensureListener() {
    if (!usesNotifications() || listener != null || closed.get()) {
      return;
    }
    synchronized (listenerLock) {
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
    try {
      engine.prepare(c);
      if (switchedSchema != null) {
        return SchemaSwitch.borrowed(c, engine, switchedSchema);
      }
    } catch (SQLException | RuntimeException e) {
      c.close();
      throw e;
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

  private boolean isRetryableAbort(Throwable t) {
    return t instanceof SQLException && engine.isRetryableAbort((SQLException) t);
  }

  private <T> T writeOnce(String what, SqlWork<T> work) {
    engine.acquireWriteLock();
    try {
      long ticket = availability.begin();
      try (Connection c = borrow()) {
        engine.begin(c);
        boolean committed = false;
        try {
          T result = work.run(c);
          engine.commit(c);
          committed = true;
          availability.succeeded(ticket, true);
          return result;
        } finally {
          if (!committed) {
            try {
              engine.rollback(c);
            } catch (SQLException e) {
              LOG.debug("Rollback failed (the transaction may already be gone)", e);
            }
          }
          engine.afterTransaction(c);
        }
      } catch (SQLException e) {
        throw failed(what, e);
      }
    } finally {
      engine.releaseWriteLock();
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
    if (StoreErrors.isStoreFault(engine, e)) {
      availability.failed(what, e, !StoreErrors.isConnectivity(engine, e));
    }
    return translate(what, e);
  }

  /** Translates {@code e} as this store's engine classifies it. */
  TetherStoreException translate(String what, SQLException e) {
    return StoreErrors.translate(engine, what, e);
  }

  /** The notification listener lost its connection: a store fault. */
  void listenerLost(Throwable cause) {
    availability.failed("listening for enqueue notifications", cause, false);
  }

  /** The notification listener connected; {@code ticket} is from before it began to connect. */
  void listenerConnected(long ticket) {
    availability.succeeded(ticket, false);
  }

  private static String redact(String url) {
    // password= parameters, and the password of a user:password@ in a scheme://... URL
    return url.replaceAll("(?i)(password=)[^&;]*", "$1***")
        .replaceAll("^([A-Za-z][A-Za-z0-9+.-]*://[^/@:]*:)[^/@]*@", "$1***@");
  }
}
