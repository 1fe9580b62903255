package dev.tether.spring.autoconfigure;

import dev.tether.LeaseExtenderConfig;
import dev.tether.loop.Calibration;
import dev.tether.loop.LoopGroup;
import dev.tether.loop.MainLoopConfig;
import dev.tether.mailbox.Mailbox;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Tether's settings in a Spring Boot application ({@code tether.*}).
 */
@ConfigurationProperties("tether")
public class TetherProperties {
  /** Whether Tether is configured at all. */
  private boolean enabled = true;

  private final Store store = new Store();
  private final Worker worker = new Worker();
  private final Sweep sweep = new Sweep();
  private final HandlerDefaults handlerDefaults = new HandlerDefaults();
  private final HealthServer healthServer = new HealthServer();
  private final Health health = new Health();
  private final Metrics metrics = new Metrics();

  /**
   * Returns whether Tether is configured.
   *
   * @return true by default
   */
  public boolean isEnabled() {
    return enabled;
  }

  /**
   * Sets whether Tether is configured.
   *
   * @param enabled false to configure nothing
   */
  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  /**
   * Returns the store settings.
   *
   * @return {@code tether.store.*}
   */
  public Store getStore() {
    return store;
  }

  /**
   * Returns the worker settings.
   *
   * @return {@code tether.worker.*}
   */
  public Worker getWorker() {
    return worker;
  }

  /**
   * Returns the recovery sweep's settings.
   *
   * @return {@code tether.sweep.*}
   */
  public Sweep getSweep() {
    return sweep;
  }

  /**
   * Returns the defaults of handler beans.
   *
   * @return {@code tether.handler-defaults.*}
   */
  public HandlerDefaults getHandlerDefaults() {
    return handlerDefaults;
  }

  /**
   * Returns the settings of Tether's own health server.
   *
   * @return {@code tether.health-server.*}
   */
  public HealthServer getHealthServer() {
    return healthServer;
  }

  /**
   * Returns the Actuator health settings.
   *
   * @return {@code tether.health.*}
   */
  public Health getHealth() {
    return health;
  }

  /**
   * Returns the Micrometer settings.
   *
   * @return {@code tether.metrics.*}
   */
  public Metrics getMetrics() {
    return metrics;
  }

  /** Micrometer meters, when Micrometer is present ({@code tether.metrics.*}). */
  public static class Metrics {
    /**
     * Whether this process exports the store-wide gauges (items by queue and status, read from
     * the store at most every refresh). Turn it on in one process per store, not in every worker,
     * so that the same series is not exported once per worker.
     */
    private boolean queueDepth;

    /** How often the store-wide gauges are read from the store at most. */
    private Duration queueDepthRefresh = Duration.ofSeconds(15);

    /** Whether the handler-duration timer publishes a histogram (for percentiles in Prometheus). */
    private boolean handlerHistogram;

    /**
     * Returns whether the store-wide gauges are exported.
     *
     * @return false by default
     */
    public boolean isQueueDepth() {
      return queueDepth;
    }

    /**
     * Sets whether the store-wide gauges are exported.
     *
     * @param queueDepth the flag
     */
    public void setQueueDepth(boolean queueDepth) {
      this.queueDepth = queueDepth;
    }

    /**
     * Returns the refresh of the store-wide gauges.
     *
     * @return the refresh
     */
    public Duration getQueueDepthRefresh() {
      return queueDepthRefresh;
    }

    /**
     * Sets the refresh of the store-wide gauges.
     *
     * @param queueDepthRefresh the refresh
     */
    public void setQueueDepthRefresh(Duration queueDepthRefresh) {
      this.queueDepthRefresh = queueDepthRefresh;
    }

    /**
     * Returns whether the handler timer publishes a histogram.
     *
     * @return false by default
     */
    public boolean isHandlerHistogram() {
      return handlerHistogram;
    }

    /**
     * Sets whether the handler timer publishes a histogram.
     *
     * @param handlerHistogram the flag
     */
    public void setHandlerHistogram(boolean handlerHistogram) {
      this.handlerHistogram = handlerHistogram;
    }
  }

  /** Where Tether keeps its tables ({@code tether.store.*}). */
  public static class Store {
    /**
     * JDBC URL (jdbc:postgresql://..., jdbc:sqlite:FILE) or SQLite file path of a database that
     * Tether opens with a pool of its own. Unset: the application's DataSource (messages sent in
     * its transactions join them), or, without one, the SQLite file tether.db.
     */
    private String url;

    /** The SQLite file used when there is neither a URL nor an application DataSource. */
    private String defaultFile = "tether.db";

    /**
     * PostgreSQL schema holding Tether's tables (created when migrations run). Unset: the
     * connection's current schema (the URL's currentSchema, else search_path); on an application
     * Hikari pool with auto-commit off and a schema of its own, that schema (such a pool sets it
     * where a rollback undoes it).
     */
    private String schema;

    /**
     * What opening the store does about its tables: true (create or upgrade them), validate
     * (change nothing; refuse a missing, older or newer schema) or false (change and check
     * nothing).
     */
    private String migrate = "true";

    /** Size of the pool Tether opens on tether.store.url (0: 4 on SQLite, 10 on PostgreSQL). */
    private int poolSize;

    /** Whether waiting workers hear other processes' sends at once (PostgreSQL LISTEN/NOTIFY). */
    private boolean notifications = true;

    /**
     * Whether the PostgreSQL server processes behind the store's connections are asked, once per
     * connection, to keep up to 2 MB they freed for the next statement instead of returning it to
     * the system after every statement (faster group commits; ignored on SQLite).
     */
    private boolean retainBackendMemory = true;

    /**
     * Returns the URL.
     *
     * @return the URL, or null
     */
    public String getUrl() {
      return url;
    }

    /**
     * Sets the URL.
     *
     * @param url the URL
     */
    public void setUrl(String url) {
      this.url = url;
    }

    /**
     * Returns the default SQLite file.
     *
     * @return the path
     */
    public String getDefaultFile() {
      return defaultFile;
    }

    /**
     * Sets the default SQLite file.
     *
     * @param defaultFile the path
     */
    public void setDefaultFile(String defaultFile) {
      this.defaultFile = defaultFile;
    }

    /**
     * Returns the schema.
     *
     * @return the schema, or null
     */
    public String getSchema() {
      return schema;
    }

    /**
     * Sets the schema.
     *
     * @param schema the schema
     */
    public void setSchema(String schema) {
      this.schema = schema;
    }

    /**
     * Returns the migration mode.
     *
     * @return true, false or validate
     */
    public String getMigrate() {
      return migrate;
    }

    /**
     * Sets the migration mode.
     *
     * @param migrate true, false or validate
     */
    public void setMigrate(String migrate) {
      this.migrate = migrate;
    }

    /**
     * Returns the pool size.
     *
     * @return the size, or 0
     */
    public int getPoolSize() {
      return poolSize;
    }

    /**
     * Sets the pool size.
     *
     * @param poolSize the size
     */
    public void setPoolSize(int poolSize) {
      this.poolSize = poolSize;
    }

    /**
     * Returns whether notifications are on.
     *
     * @return true by default
     */
    public boolean isNotifications() {
      return notifications;
    }

    /**
     * Sets whether notifications are on.
     *
     * @param notifications the flag
     */
    public void setNotifications(boolean notifications) {
      this.notifications = notifications;
    }

    /**
     * Returns whether server processes are asked to keep freed memory.
     *
     * @return true by default
     */
    public boolean isRetainBackendMemory() {
      return retainBackendMemory;
    }

    /**
     * Sets whether server processes are asked to keep freed memory.
     *
     * @param retainBackendMemory the flag
     */
    public void setRetainBackendMemory(boolean retainBackendMemory) {
      this.retainBackendMemory = retainBackendMemory;
    }
  }

  /** The loops that run the handler beans ({@code tether.worker.*}). */
  public static class Worker {
    /** Whether this application runs its handler beans (false: it only sends). */
    private boolean enabled = true;

    /**
     * How long the loops have to stop once shutdown begins; what is still running then is
     * interrupted and handed back (not charged). Tether's store stays open until then, however
     * long spring.lifecycle.timeout-per-shutdown-phase is.
     */
    private Duration shutdownTimeout = LoopGroup.DEFAULT_SHUTDOWN_TIMEOUT;

    /**
     * How long running handlers go on as usual once shutdown begins (the loops take no new work)
     * before they are asked to stop (WorkContext.isShutdownRequested()); less than the shutdown
     * timeout. Zero: asked at once.
     */
    private Duration drainTimeout = Duration.ZERO;

    /** How long a receive waits for a message before looking again (at most 20 s). */
    private Duration waitTime = Mailbox.MAX_WAIT_TIME;

    /** What a violated timeout rule does when the loops are built: error, warn or off. */
    private Calibration.Mode calibration = Calibration.Mode.ERROR;

    /**
     * A loop whose heartbeat is older than this fails readiness (unset: 90% of the watchdog's
     * threshold).
     */
    private Duration readinessThreshold;

    private final Watchdog watchdog = new Watchdog();

    /**
     * Returns whether the handlers run.
     *
     * @return true by default
     */
    public boolean isEnabled() {
      return enabled;
    }

    /**
     * Sets whether the handlers run.
     *
     * @param enabled the flag
     */
    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    /**
     * Returns the shutdown timeout.
     *
     * @return the timeout
     */
    public Duration getShutdownTimeout() {
      return shutdownTimeout;
    }

    /**
     * Sets the shutdown timeout.
     *
     * @param shutdownTimeout the timeout
     */
    public void setShutdownTimeout(Duration shutdownTimeout) {
      this.shutdownTimeout = shutdownTimeout;
    }

    /**
     * Returns the drain timeout.
     *
     * @return the timeout
     */
    public Duration getDrainTimeout() {
      return drainTimeout;
    }

    /**
     * Sets the drain timeout.
     *
     * @param drainTimeout the timeout
     */
    public void setDrainTimeout(Duration drainTimeout) {
      this.drainTimeout = drainTimeout;
    }

    /**
     * Returns the receive wait.
     *
     * @return the wait
     */
    public Duration getWaitTime() {
      return waitTime;
    }

    /**
     * Sets the receive wait.
     *
     * @param waitTime the wait
     */
    public void setWaitTime(Duration waitTime) {
      this.waitTime = waitTime;
    }

    /**
     * Returns the calibration mode.
     *
     * @return the mode
     */
    public Calibration.Mode getCalibration() {
      return calibration;
    }

    /**
     * Sets the calibration mode.
     *
     * @param calibration the mode
     */
    public void setCalibration(Calibration.Mode calibration) {
      this.calibration = calibration;
    }

    /**
     * Returns the readiness threshold.
     *
     * @return the threshold, or null
     */
    public Duration getReadinessThreshold() {
      return readinessThreshold;
    }

    /**
     * Sets the readiness threshold.
     *
     * @param readinessThreshold the threshold
     */
    public void setReadinessThreshold(Duration readinessThreshold) {
      this.readinessThreshold = readinessThreshold;
    }

    /**
     * Returns the watchdog settings.
     *
     * @return {@code tether.worker.watchdog.*}
     */
    public Watchdog getWatchdog() {
      return watchdog;
    }
  }

  /** The watchdog that ends a process whose loops stopped beating ({@code tether.worker.watchdog.*}). */
  public static class Watchdog {
    /**
     * Whether a loop silent past the threshold ends the process. Liveness fails at the same
     * threshold, also when this is off.
     */
    private boolean enabled = true;

    /** How long a loop may go without a beat before the watchdog ends the process. */
    private Duration threshold = LoopGroup.DEFAULT_WATCHDOG_THRESHOLD;

    /** How often the watchdog looks (less than a third of the threshold). */
    private Duration interval = LoopGroup.DEFAULT_WATCHDOG_INTERVAL;

    /**
     * Returns whether the watchdog runs.
     *
     * @return true by default
     */
    public boolean isEnabled() {
      return enabled;
    }

    /**
     * Sets whether the watchdog runs.
     *
     * @param enabled the flag
     */
    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    /**
     * Returns the threshold.
     *
     * @return the threshold
     */
    public Duration getThreshold() {
      return threshold;
    }

    /**
     * Sets the threshold.
     *
     * @param threshold the threshold
     */
    public void setThreshold(Duration threshold) {
      this.threshold = threshold;
    }

    /**
     * Returns the interval.
     *
     * @return the interval
     */
    public Duration getInterval() {
      return interval;
    }

    /**
     * Sets the interval.
     *
     * @param interval the interval
     */
    public void setInterval(Duration interval) {
      this.interval = interval;
    }
  }

  /** The recovery sweep ({@code tether.sweep.*}). */
  public static class Sweep {
    /**
     * Whether this process sweeps expired leases into retries or dead letters (receives do the
     * same for the items they meet; the sweep finds the rest).
     */
    private boolean enabled = true;

    /** How often the sweep looks. */
    private Duration interval = Duration.ofSeconds(60);

    /**
     * Returns whether the sweep runs.
     *
     * @return true by default
     */
    public boolean isEnabled() {
      return enabled;
    }

    /**
     * Sets whether the sweep runs.
     *
     * @param enabled the flag
     */
    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    /**
     * Returns the interval.
     *
     * @return the interval
     */
    public Duration getInterval() {
      return interval;
    }

    /**
     * Sets the interval.
     *
     * @param interval the interval
     */
    public void setInterval(Duration interval) {
      this.interval = interval;
    }
  }

  /** What a handler bean does not say itself ({@code tether.handler-defaults.*}). */
  public static class HandlerDefaults {
    /** Messages of one queue handled at once in this process (one loop each). */
    private int concurrency = 1;

    /** How long a received message stays invisible before a beat extends it. */
    private Duration visibility = MainLoopConfig.DEFAULT_VISIBILITY_TIMEOUT;

    /** Budget of charged attempts of the messages this application sends. */
    private int maxAttempts = Mailbox.DEFAULT_MAX_ATTEMPTS;

    /** Longest a handler may work on one message (unset: no limit). */
    private Duration deadline;

    /** Beats extend the lease at most once per this interval. */
    private Duration extendEvery = LeaseExtenderConfig.DEFAULT_INTERVAL;

    /** How far each extension pushes the lease's expiry. */
    private Duration extension = LeaseExtenderConfig.DEFAULT_EXTENSION;

    /**
     * Returns the concurrency.
     *
     * @return the concurrency
     */
    public int getConcurrency() {
      return concurrency;
    }

    /**
     * Sets the concurrency.
     *
     * @param concurrency the concurrency
     */
    public void setConcurrency(int concurrency) {
      this.concurrency = concurrency;
    }

    /**
     * Returns the visibility timeout.
     *
     * @return the timeout
     */
    public Duration getVisibility() {
      return visibility;
    }

    /**
     * Sets the visibility timeout.
     *
     * @param visibility the timeout
     */
    public void setVisibility(Duration visibility) {
      this.visibility = visibility;
    }

    /**
     * Returns the budget.
     *
     * @return the budget
     */
    public int getMaxAttempts() {
      return maxAttempts;
    }

    /**
     * Sets the budget.
     *
     * @param maxAttempts the budget
     */
    public void setMaxAttempts(int maxAttempts) {
      this.maxAttempts = maxAttempts;
    }

    /**
     * Returns the deadline.
     *
     * @return the deadline, or null
     */
    public Duration getDeadline() {
      return deadline;
    }

    /**
     * Sets the deadline.
     *
     * @param deadline the deadline
     */
    public void setDeadline(Duration deadline) {
      this.deadline = deadline;
    }

    /**
     * Returns the extension interval.
     *
     * @return the interval
     */
    public Duration getExtendEvery() {
      return extendEvery;
    }

    /**
     * Sets the extension interval.
     *
     * @param extendEvery the interval
     */
    public void setExtendEvery(Duration extendEvery) {
      this.extendEvery = extendEvery;
    }

    /**
     * Returns the extension.
     *
     * @return the extension
     */
    public Duration getExtension() {
      return extension;
    }

    /**
     * Sets the extension.
     *
     * @param extension the extension
     */
    public void setExtension(Duration extension) {
      this.extension = extension;
    }
  }

  /** Tether's own HTTP health server, off in a Boot application ({@code tether.health-server.*}). */
  public static class HealthServer {
    /** Whether Tether's own health server runs beside the Actuator. */
    private boolean enabled;

    /** Its port (0: any free port). */
    private int port = 8081;

    /**
     * Returns whether it runs.
     *
     * @return false by default
     */
    public boolean isEnabled() {
      return enabled;
    }

    /**
     * Sets whether it runs.
     *
     * @param enabled the flag
     */
    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    /**
     * Returns the port.
     *
     * @return the port
     */
    public int getPort() {
      return port;
    }

    /**
     * Sets the port.
     *
     * @param port the port
     */
    public void setPort(int port) {
      this.port = port;
    }
  }

  /** Actuator health ({@code tether.health.*}). */
  public static class Health {
    /**
     * Whether Tether's indicators join the liveness (loops beating) and readiness (store
     * available, loops ready) groups of the Actuator's probes.
     */
    private boolean probes = true;

    /**
     * Returns whether the indicators join the probe groups.
     *
     * @return true by default
     */
    public boolean isProbes() {
      return probes;
    }

    /**
     * Sets whether the indicators join the probe groups.
     *
     * @param probes the flag
     */
    public void setProbes(boolean probes) {
      this.probes = probes;
    }
  }
}
