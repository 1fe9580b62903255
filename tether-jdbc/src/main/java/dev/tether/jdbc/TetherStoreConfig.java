package dev.tether.jdbc;

import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Immutable options of a {@link TetherStore}. Build with {@link #builder()}; every setter
 * validates its value at once.
 */
public final class TetherStoreConfig {
  /** Default SQLite busy timeout: how long a writer waits for another process's write lock. */
  public static final Duration DEFAULT_BUSY_TIMEOUT = Duration.ofSeconds(30);

  /** Default size of a pool the store creates for SQLite. */
  public static final int DEFAULT_SQLITE_POOL_SIZE = 4;

  /** Default size of a pool the store creates for PostgreSQL. */
  public static final int DEFAULT_POSTGRES_POOL_SIZE = 10;

  /** Default wait for a pooled connection. */
  public static final Duration DEFAULT_CONNECTION_TIMEOUT = Duration.ofSeconds(10);

  /** SQLite durability levels ({@code PRAGMA synchronous}). */
  public enum SqliteSynchronous {
    /** WAL + NORMAL: durable against process crashes; a power loss may lose the last commits. */
    NORMAL,
    /** WAL + FULL: every commit survives a power loss; slower. */
    FULL
  }

  /**
   * What opening a store does about the schema's tables ({@code tether.store.migrate}, {@code
   * true|false|validate}).
   */
  public enum SchemaMigration {
    /** Creates or upgrades the tables to the version this code needs (the default). */
    MIGRATE,
    /**
     * Changes nothing, and refuses to open when the schema is missing, older or newer than the
     * version this code needs ({@link SchemaVersionException}, naming both versions): for
     * databases where DDL at run time is forbidden and migrations are applied by an operator.
     */
    VALIDATE,
    /** Changes and checks nothing: the operator vouches for the schema. */
    NONE;

    /**
     * Parses a user's setting: {@code true} or {@code migrate}, {@code false} or {@code none},
     * {@code validate} (any case).
     *
     * @param text the setting
     * @return the mode
     * @throws IllegalArgumentException if the text names no mode
     */
    public static SchemaMigration parse(String text) {
      Objects.requireNonNull(text, "text");
      switch (text.trim().toLowerCase(java.util.Locale.ROOT)) {
        case "true":
        case "migrate":
          return MIGRATE;
        case "false":
        case "none":
          return NONE;
        case "validate":
          return VALIDATE;
        default:
          throw new IllegalArgumentException(
              "schema migration must be true, false or validate, was '" + text + "'");
      }
    }
  }

  /** A schema name: a plain lowercase-or-uppercase SQL identifier (never quoted), 1..63 chars. */
  private static final Pattern SCHEMA_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");

  private final Clock clock;
  private final String schema;
  private final SchemaMigration migration;
  private final Duration busyTimeout;
  private final SqliteSynchronous sqliteSynchronous;
  private final int maximumPoolSize;
  private final Duration connectionTimeout;
  private final boolean groupCommit;
  private final boolean notifications;
  private final boolean retainBackendMemory;

  private TetherStoreConfig(Builder b) {
    this.clock = b.clock;
    this.schema = b.schema;
    this.migration = b.migration;
    this.busyTimeout = b.busyTimeout;
    this.sqliteSynchronous = b.sqliteSynchronous;
    this.maximumPoolSize = b.maximumPoolSize;
    this.connectionTimeout = b.connectionTimeout;
    this.groupCommit = b.groupCommit;
    this.notifications = b.notifications;
    this.retainBackendMemory = b.retainBackendMemory;
  }

  /**
   * Returns the defaults: database clock (PostgreSQL) or system clock (SQLite), 30 s busy
   * timeout, synchronous NORMAL, pool of 4 (SQLite) or 10 (PostgreSQL).
   *
   * @return the default configuration
   */
  public static TetherStoreConfig defaults() {
    return builder().build();
  }

  /**
   * Returns a new builder holding the defaults.
   *
   * @return a builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Returns the clock that decides every instant and expiry, if one was set (test mode).
   *
   * @return the clock, or empty to use the database clock (PostgreSQL) / system clock (SQLite)
   */
  public Optional<Clock> clock() {
    return Optional.ofNullable(clock);
  }

  /**
   * Returns the PostgreSQL schema that holds Tether's tables, if one was set (or adopted from a
   * caller's HikariCP pool that does not auto-commit: {@link TetherStore#open(javax.sql.DataSource,
   * TetherStoreConfig)}); else the connection's current schema ({@code currentSchema} in the URL,
   * or the server's {@code search_path}).
   *
   * @return the schema name
   */
  public Optional<String> schema() {
    return Optional.ofNullable(schema);
  }

  /**
   * Returns what opening the store does about the schema.
   *
   * @return {@link SchemaMigration#MIGRATE} by default
   */
  public SchemaMigration migration() {
    return migration;
  }

  /**
   * Returns the SQLite busy timeout.
   *
   * @return the timeout
   */
  public Duration busyTimeout() {
    return busyTimeout;
  }

  /**
   * Returns the SQLite synchronous level.
   *
   * @return the level
   */
  public SqliteSynchronous sqliteSynchronous() {
    return sqliteSynchronous;
  }

  /**
   * Returns the size of a pool the store creates; 0 means the engine's default.
   *
   * @return the pool size, or 0
   */
  public int maximumPoolSize() {
    return maximumPoolSize;
  }

  /**
   * Returns how long to wait for a pooled connection.
   *
   * @return the timeout
   */
  public Duration connectionTimeout() {
    return connectionTimeout;
  }

  /**
   * Returns whether concurrent completions and acknowledgements (and on PostgreSQL single
   * enqueues) share transactions (group commit). Each is still durable when its call returns.
   *
   * @return true by default
   */
  public boolean groupCommit() {
    return groupCommit;
  }

  /**
   * Returns whether waiting receivers are woken by database notifications (PostgreSQL {@code
   * LISTEN/NOTIFY}) when another process enqueues, instead of only by polling. Ignored on SQLite,
   * where sends in the same process wake receivers at once.
   *
   * @return true by default
   */
  public boolean notifications() {
    return notifications;
  }

  /**
   * Returns whether the PostgreSQL server processes behind the store's connections are asked to
   * keep memory they freed for the next statement ({@link Builder#retainBackendMemory}).
   *
   * @return true by default
   */
  public boolean retainBackendMemory() {
    return retainBackendMemory;
  }

  /**
   * Returns a builder holding this configuration's settings, to change some of them.
   *
   * @return a new builder
   */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.clock = clock;
    b.migration = migration;
    b.busyTimeout = busyTimeout;
    b.sqliteSynchronous = sqliteSynchronous;
    b.maximumPoolSize = maximumPoolSize;
    b.connectionTimeout = connectionTimeout;
    b.groupCommit = groupCommit;
    b.notifications = notifications;
    b.retainBackendMemory = retainBackendMemory;
    b.schema = schema;
    return b;
  }

  @Override
  public String toString() {
    return "TetherStoreConfig[clock="
        + (clock == null ? "database/system" : clock)
        + (schema == null ? "" : ", schema=" + schema)
        + ", migration="
        + migration
        + ", busyTimeout="
        + dev.tether.DurationText.of(busyTimeout)
        + ", sqliteSynchronous="
        + sqliteSynchronous
        + ", maximumPoolSize="
        + (maximumPoolSize == 0 ? "engine default" : maximumPoolSize)
        + ", connectionTimeout="
        + dev.tether.DurationText.of(connectionTimeout)
        + ", groupCommit="
        + groupCommit
        + ", notifications="
        + notifications
        + ", retainBackendMemory="
        + retainBackendMemory
        + "]";
  }

  /** Builds a {@link TetherStoreConfig}. Not thread-safe. */
  public static final class Builder {
    private Clock clock;
    private String schema;
    private SchemaMigration migration = SchemaMigration.MIGRATE;
    private Duration busyTimeout = DEFAULT_BUSY_TIMEOUT;
    private SqliteSynchronous sqliteSynchronous = SqliteSynchronous.NORMAL;
    private int maximumPoolSize;
    private Duration connectionTimeout = DEFAULT_CONNECTION_TIMEOUT;
    private boolean groupCommit = true;
    private boolean notifications = true;
    private boolean retainBackendMemory = true;

    private Builder() {}

    /**
     * Sets whether concurrent completions, acknowledgements and lease renewals share
     * transactions (group commit): callers that arrive while one group commits are committed
     * together next, each returning only after its own change is durable, and each refused on
     * its own when its lease token no longer holds. One group commits at a time: a completion
     * arriving while none is in flight commits at once, those arriving during a commit share the
     * next one. On SQLite acquisitions ({@code receive}, {@code LeaseManager.acquire}) join the
     * group's transaction too. Renewals due together share one statement. On PostgreSQL,
     * concurrent single enqueues of items without an idempotency key ({@code
     * LeaseManager.enqueue}, {@code JdbcMailbox.send} on a mailbox without capacity) share one
     * statement, one commit and one notification the same way, each caller getting its own
     * item's id. Default true; false gives one transaction per call.
     *
     * @param enabled whether to group commits
     * @return this builder
     */
    public Builder groupCommit(boolean enabled) {
      this.groupCommit = enabled;
      return this;
    }

    /**
     * Sets whether, on PostgreSQL, enqueues notify ({@code pg_notify}) and waiting receivers
     * listen ({@code LISTEN}, one dedicated connection per store, opened on the first wait), so
     * that items enqueued by other processes are started within milliseconds rather than the
     * next poll. An enqueue wakes a few of the stores waiting for its queue, not all (a roster
     * of session advisory locks, one per store and queue), and a waiting receiver learns when the
     * next delayed item or lease of its queue comes due; without notifications receivers poll
     * every 100 ms. Default true. Ignored on SQLite.
     *
     * @param enabled whether to use notifications
     * @return this builder
     */
    public Builder notifications(boolean enabled) {
      this.notifications = enabled;
      return this;
    }

    /**
     * Sets whether, on PostgreSQL, the server process behind each connection the store borrows
     * is asked once, the first time the store borrows the connection with no transaction open on
     * it, to keep up to 2 MB of memory it frees instead of handing it back to the operating
     * system after every statement. A server built on glibc (most Linux builds) returns the top
     * of its heap once more than 128 kB of it is free; Tether's group statements free about
     * 200 kB each, so without this every one of them shrinks the heap and grows it again (two
     * system calls, page faults and, on virtual machines, a TLB flush across processors): one
     * writer's groups of 7 enqueues took twice as long with a nearly free WAL flush, and 40%
     * longer on a disk whose flush takes 0.3 ms. The request is one statement that allocates
     * and frees 1 MB (glibc then raises the process's trim threshold to 2 MB); it reads no table,
     * writes nothing and ends only the transaction it opened itself; a failure is logged at
     * debug and the connection used as it is. The server process keeps up to 2 MB more free
     * memory (about 100 kB measured); other C libraries ignore the request. Connections of a
     * caller's data source are included (not the listener's); behind a transaction-mode pooler
     * the request reaches whichever server process serves it. Default true. Ignored on SQLite.
     *
     * @param enabled whether to ask for it
     * @return this builder
     */
    public Builder retainBackendMemory(boolean enabled) {
      this.retainBackendMemory = enabled;
      return this;
    }

    /**
     * Sets a clock that decides every instant and lease expiry in place of the database clock
     * (tests). Components may override it with their own.
     *
     * @param clock the clock
     * @return this builder
     */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /**
     * Sets the PostgreSQL schema that holds Tether's tables, so that they live beside an
     * application's own tables without touching them. On a pool the store creates, every
     * connection uses it; on a caller's data source, the store switches a borrowed connection's
     * {@code search_path} to it and back before returning it (three statements more per borrow:
     * where that matters, give the schema as {@code currentSchema} in the URL instead). With
     * {@link SchemaMigration#MIGRATE} a missing schema is created. SQLite has no schemas: a store
     * on SQLite refuses this option.
     *
     * @param name an unquoted SQL identifier: a letter or underscore, then letters, digits or
     *     underscores, at most 63 in all
     * @return this builder
     * @throws IllegalArgumentException if the name is not such an identifier
     */
    public Builder schema(String name) {
      Objects.requireNonNull(name, "name");
      if (!SCHEMA_NAME.matcher(name).matches()) {
        throw new IllegalArgumentException("schema must be an unquoted SQL identifier (a letter or"
            + " underscore, then letters, digits or underscores, at most 63), was '" + name + "'");
      }
      this.schema = name;
      return this;
    }

    /**
     * Sets what opening the store does about the schema: migrate it (default), only validate it,
     * or neither.
     *
     * @param mode the mode
     * @return this builder
     */
    public Builder migration(SchemaMigration mode) {
      this.migration = Objects.requireNonNull(mode, "mode");
      return this;
    }

    /**
     * Sets the SQLite busy timeout.
     *
     * @param timeout positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder busyTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("busyTimeout must be positive, was " + timeout);
      }
      this.busyTimeout = timeout;
      return this;
    }

    /**
     * Sets the SQLite durability level.
     *
     * @param level NORMAL (default) or FULL
     * @return this builder
     */
    public Builder sqliteSynchronous(SqliteSynchronous level) {
      this.sqliteSynchronous = Objects.requireNonNull(level, "level");
      return this;
    }

    /**
     * Sets the size of a pool the store creates (ignored for a caller's {@code DataSource}).
     *
     * @param size 1 to 1000
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder maximumPoolSize(int size) {
      if (size < 1 || size > 1000) {
        throw new IllegalArgumentException("maximumPoolSize must be in 1..1000, was " + size);
      }
      this.maximumPoolSize = size;
      return this;
    }

    /**
     * Sets how long to wait for a pooled connection.
     *
     * @param timeout at least 250 ms
     * @return this builder
     * @throws IllegalArgumentException if shorter than 250 ms
     */
    public Builder connectionTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.toMillis() < 250) {
        throw new IllegalArgumentException("connectionTimeout must be >= 250ms, was " + timeout);
      }
      this.connectionTimeout = timeout;
      return this;
    }

    /**
     * Builds the configuration.
     *
     * @return the configuration
     */
    public TetherStoreConfig build() {
      return new TetherStoreConfig(this);
    }
  }
}
