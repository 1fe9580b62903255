package dev.tether.cli.internal;

import dev.tether.LeaseExtender;
import dev.tether.LeaseExtenderConfig;
import com.sun.net.httpserver.HttpHandler;
import dev.tether.Codec;
import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.LeaseCheck;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.RecoverySweep;
import dev.tether.jdbc.RecoverySweepConfig;
import dev.tether.jdbc.TetherStore;
import dev.tether.loop.Handler;
import dev.tether.loop.LoopGroup;
import dev.tether.loop.MainLoop;
import dev.tether.micrometer.TetherMetrics;
import dev.tether.loop.MainLoopConfig;
import dev.tether.loop.WorkContext;
import dev.tether.loop.WorkStoppedException;
import dev.tether.mailbox.DeadLetterPolicy;
import dev.tether.mailbox.LeaseStatus;
import dev.tether.mailbox.Message;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker node: a {@link LoopGroup} of {@code concurrency} {@link MainLoop}s, each on a {@link
 * JdbcMailbox} of one queue of a store (the same mailbox any library user has), running items as
 * child processes with {@link ProcessRunner}, plus a background {@link RecoverySweep}; the group
 * brings the optional watchdog and the health server.
 *
 * <p>Exit 0 completes an item with its {@link CommandResult} as output; any other exit ends the
 * attempt as failed with the command's report as the item's error: retried after the loop's
 * backoff while the item's own budget ({@code max_attempts}) has attempts left, else
 * dead-lettered ({@code failed}). A payload the worker cannot read is dead-lettered at once. A
 * command that goes silent stops extending its lease; its process tree is killed when its lease
 * is found lost: by the store (a token check on the store's clock, while the heartbeat is quiet)
 * or by this process's monotonic clock (the lease ran out without a confirmed extension, as when
 * the store cannot be reached), or when the item is cancelled (the store's cancellation watch
 * tells the loop within about a second). A command takes part in its lease through its
 * environment: it resumes from {@code TETHER_CHECKPOINT}, and its
 * {@code "$TETHER_CLI" checkpoint} and {@code beat} are recorded in the store as work beats,
 * which this worker reads while the command is silent and counts as output. {@link #stop} drains:
 * no new items, and running commands go on (still extending their leases) for up to the drain
 * timeout; those still running then are killed and their items handed back, without charging
 * their attempt, with their latest checkpoint. {@link #stopNow()} ends the drain at once.
 *
 * <p>Thread-safe; {@link #start(Health, boolean)} once, {@link #stop(Duration)} idempotent.
 */
public final class Worker implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Worker.class);

  /** Characters of each output tail kept in a failed item's error message. */
  static final int FAILURE_TAIL_CHARS = 1000;

  /** How often a silent command's lease is probed in the store. */
  static final Duration PROBE_INTERVAL = Duration.ofMillis(500);

  /**
   * Added to {@code --kill-grace} for the stop margin: the runner's poll, the SIGKILL and its
   * delivery.
   */
  static final Duration STOP_MARGIN_EXTRA = Duration.ofMillis(500);

  /**
   * A worker's configuration. Immutable; validated on construction.
   *
   * @param queue the queue to work on
   * @param concurrency parallel loops, 1..64
   * @param visibility lease duration on receive
   * @param extendEvery minimum time between two extensions (rate limit)
   * @param extension how far each extension reaches from now
   * @param killGrace time between SIGTERM and SIGKILL when a command must stop
   * @param tailBytes bytes of each output stream kept
   * @param sweepInterval time between recovery sweeps
   * @param watchdog stall threshold of the watchdog, or null for none
   * @param drainTimeout how long running commands may go on after a stop request, >= 0
   */
  public record Config(
      String queue,
      int concurrency,
      Duration visibility,
      Duration extendEvery,
      Duration extension,
      Duration killGrace,
      int tailBytes,
      Duration sweepInterval,
      Duration watchdog,
      Duration drainTimeout) {
    /**
     * A configuration without a drain: a stop request stops running commands at once.
     *
     * @param queue the queue to work on
     * @param concurrency parallel loops, 1..64
     * @param visibility lease duration on receive
     * @param extendEvery minimum time between two extensions (rate limit)
     * @param extension how far each extension reaches from now
     * @param killGrace time between SIGTERM and SIGKILL when a command must stop
     * @param tailBytes bytes of each output stream kept
     * @param sweepInterval time between recovery sweeps
     * @param watchdog stall threshold of the watchdog, or null for none
     * @throws IllegalArgumentException naming the value and the rule
     */
    public Config(String queue, int concurrency, Duration visibility, Duration extendEvery,
        Duration extension, Duration killGrace, int tailBytes, Duration sweepInterval,
        Duration watchdog) {
      this(queue, concurrency, visibility, extendEvery, extension, killGrace, tailBytes,
          sweepInterval, watchdog, Duration.ZERO);
    }

    /**
     * Validates the configuration.
     *
     * @param queue the queue to work on
     * @param concurrency parallel loops, 1..64
     * @param visibility lease duration on receive
     * @param extendEvery minimum time between two extensions (rate limit)
     * @param extension how far each extension reaches from now
     * @param killGrace time between SIGTERM and SIGKILL when a command must stop
     * @param tailBytes bytes of each output stream kept
     * @param sweepInterval time between recovery sweeps
     * @param watchdog stall threshold of the watchdog, or null for none
     * @param drainTimeout how long running commands may go on after a stop request, >= 0
     * @throws IllegalArgumentException naming the value and the rule
     */
    public Config {
      Objects.requireNonNull(queue, "queue");
      if (concurrency < 1 || concurrency > 64) {
        throw new IllegalArgumentException("--concurrency must be 1..64, was " + concurrency);
      }
      positive("--visibility", visibility);
      if (visibility.compareTo(dev.tether.mailbox.Mailbox.MAX_VISIBILITY_TIMEOUT) > 0) {
        throw new IllegalArgumentException("--visibility must be at most "
            + dev.tether.DurationText.of(dev.tether.mailbox.Mailbox.MAX_VISIBILITY_TIMEOUT) + ", was "
            + dev.tether.DurationText.of(visibility) + " (a longer job keeps its lease by extensions)");
      }
      positive("--extend-every", extendEvery);
      positive("--extension", extension);
      positive("--sweep-every", sweepInterval);
      if (extendEvery.compareTo(extension.dividedBy(2)) >= 0) {
        throw new IllegalArgumentException(
            "--extend-every ("
                + dev.tether.DurationText.of(extendEvery)
                + ") must be less than half of --extension ("
                + dev.tether.DurationText.of(extension)
                + "), or a lease can expire between two extensions");
      }
      if (extension.compareTo(visibility) >= 0) {
        throw new IllegalArgumentException(
            "--extension ("
                + dev.tether.DurationText.of(extension)
                + ") must be less than --visibility ("
                + dev.tether.DurationText.of(visibility)
                + ") (calibration rule extension < visibility_timeout)");
      }
      if (watchdog != null) {
        positive("--watchdog", watchdog);
        if (visibility.compareTo(watchdog) <= 0) {
          throw new IllegalArgumentException(
              "--visibility ("
                  + dev.tether.DurationText.of(visibility)
                  + ") must be longer than --watchdog ("
                  + dev.tether.DurationText.of(watchdog)
                  + "), so that a stalled worker is ended before its leases can run out"
                  + " (calibration rule visibility_timeout > watchdog_threshold)");
        }
      }
      Objects.requireNonNull(drainTimeout, "drainTimeout");
      if (drainTimeout.isNegative()) {
        throw new IllegalArgumentException(
            "--drain-timeout must be >= 0, was " + dev.tether.DurationText.of(drainTimeout));
      }
    }

    /**
     * Returns how long the loop group has to stop after a request: the drain, then {@code
     * killGrace} + 5 s for the commands still running to be killed and handed back.
     *
     * @return the group's shutdown timeout
     */
    public Duration shutdownTimeout() {
      return drainTimeout.plus(killGrace).plusSeconds(5);
    }

    /**
     * Returns the configuration with durations as the options take them ({@code 90s}).
     *
     * @return the text logged at start
     */
    @Override
    public String toString() {
      return "Config[queue=" + queue + ", concurrency=" + concurrency + ", visibility="
          + dev.tether.DurationText.of(visibility) + ", extendEvery="
          + dev.tether.DurationText.of(extendEvery) + ", extension="
          + dev.tether.DurationText.of(extension) + ", killGrace="
          + dev.tether.DurationText.of(killGrace) + ", tailBytes=" + tailBytes
          + ", sweepInterval=" + dev.tether.DurationText.of(sweepInterval) + ", watchdog="
          + dev.tether.DurationText.of(watchdog) + "]";
    }

    private static void positive(String name, Duration d) {
      if (d == null || d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(name + " must be > 0, was " + dev.tether.DurationText.of(d));
      }
    }
  }

  private final TetherStore store;
  private final ChildAccess childAccess;
  private final LeaseManager leaseReader;
  private final Config config;
  private final WorkerEvents events;
  private final TetherMetrics metrics; // null: none
  private final String workerId;
  private final ProcessRunner runner;
  private final Duration stopMargin;
  private final java.util.concurrent.ExecutorService probes;
  private final List<MainLoop<String, String>> loops = new ArrayList<>();
  private final List<JdbcMailbox<String, String>> mailboxes = new ArrayList<>();
  private final RecoverySweep sweep;
  private final Object lifecycle = new Object();
  private boolean started; // guarded by lifecycle
  private boolean stopped; // guarded by lifecycle
  private LoopGroup group; // guarded by lifecycle
  private Thread groupThread; // guarded by lifecycle
  private final AtomicReference<RuntimeException> groupFailure = new AtomicReference<>();
  private volatile boolean startReturned;
  private final java.util.concurrent.atomic.AtomicInteger running = new java.util.concurrent.atomic.AtomicInteger();
  private dev.tether.jdbc.WorkerRegistration registration; // guarded by lifecycle; null: not registered

  /**
   * Creates a worker.
   *
   * @param store the store (not closed by the worker)
   * @param config the configuration
   * @param events observer of items
   */
  public Worker(TetherStore store, Config config, WorkerEvents events) {
    this(store, config, events, null, null);
  }

  /**
   * Creates a worker whose loops record into {@code metrics} and whose commands can take part in
   * their items' leases: with {@code childAccess}, their environment holds {@code TETHER_CLI},
   * {@code TETHER_DB} and {@code TETHER_LEASE} (see {@link ChildAccess}), so that
   * {@code "$TETHER_CLI" checkpoint} and {@code "$TETHER_CLI" beat} reach the item's lease.
   *
   * @param store the store (not closed by the worker)
   * @param config the configuration
   * @param events observer of items
   * @param metrics the meters of this process's loops (bind them to a registry to export them),
   *     or null for none (a worker that serves no {@code /metrics} loads no Micrometer class)
   * @param childAccess how commands reach the store, or null for commands that cannot
   */
  public Worker(TetherStore store, Config config, WorkerEvents events, TetherMetrics metrics,
      ChildAccess childAccess) {
    this.metrics = metrics;
    this.childAccess = childAccess;
    this.leaseReader = new LeaseManager(store, "tether-worker-probe");
    this.store = store;
    this.config = config;
    this.events = events;
    this.workerId = hostName() + ":" + ProcessHandle.current().pid();
    this.runner = new ProcessRunner(config.tailBytes(), config.killGrace(), config.extendEvery());
    this.stopMargin = stopMargin(config);
    java.util.concurrent.atomic.AtomicInteger probeThreads = new java.util.concurrent.atomic.AtomicInteger();
    this.probes = java.util.concurrent.Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "tether-lease-probe-" + probeThreads.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    this.sweep =
        new RecoverySweep(
            store, RecoverySweepConfig.builder().scanInterval(config.sweepInterval()).build());
    MainLoopConfig loopConfig =
        MainLoopConfig.builder()
            .visibilityTimeout(config.visibility())
            // A long poll as long as a receive allows (and short enough for the watchdog's
            // rule that a waiting loop is never taken for a stalled one): a loop's receive looks
            // at the queue when it starts, then waits for a wake-up (an enqueue, its queue's turn
            // to poll, or the loop's shutdown), so an idle worker costs its store's poll, not its
            // loops'.
            .waitTime(receiveWait(config.watchdog()))
            .leaseExtender(LeaseExtenderConfig.of(config.extendEvery(), config.extension()))
            // each item's own budget decides retries; a payload that cannot be read never will be
            .deadLetterPolicy(DeadLetterPolicy.builder().deadLetterOn(BadPayloadException.class).build())
            .build();
    for (int i = 1; i <= config.concurrency(); i++) {
      JdbcMailbox<String, String> mailbox =
          JdbcMailbox.builder(store, config.queue(), Codec.utf8(), Codec.utf8())
              .holder(workerId + "/w" + i)
              .keepResults(true)
              .build();
      mailboxes.add(mailbox);
      MainLoop<String, String> loop =
          MainLoop.builder("w" + i, mailbox, new CommandHandler())
              .config(loopConfig)
              .listener(metrics == null ? loopListener()
                  : MainLoop.Listener.all(loopListener(), metrics.loopListener(config.queue())))
              .extenderListener(extenderListener(metrics == null ? LeaseExtender.Listener.NONE
                  : metrics.extenderListener(config.queue())))
              .build();
      loops.add(loop);
    }
    if (metrics != null) {
      metrics.watchAll(loops);
    }
  }

  /**
   * Returns the meters of this worker's loops, if it was given any.
   *
   * @return the metrics, or empty
   */
  public Optional<TetherMetrics> metrics() {
    return Optional.ofNullable(metrics);
  }

  /**
   * How long before its lease may run out (by this process's clock) a command is stopped: {@code
   * --kill-grace} + {@link #STOP_MARGIN_EXTRA}, so that it is gone before the store can let another
   * worker take its item over; but at most half of {@code --extension} - {@code --extend-every}
   * (the least a healthy command's lease holds between two extensions), so that a command that
   * beats is never stopped. When that cap applies, the promise is weaker, and a warning says so.
   */
  static Duration stopMargin(Config c) {
    Duration wanted = c.killGrace().plus(STOP_MARGIN_EXTRA);
    Duration room = c.extension().minus(c.extendEvery()).dividedBy(2);
    if (wanted.compareTo(room) <= 0) {
      return wanted;
    }
    log.warn("--kill-grace ({}) is long for --extension ({}) and --extend-every ({}): a command cut"
        + " off from the store is stopped {} before its lease may run out, and may live up to {}"
        + " past it; keep --kill-grace + {} under half of --extension - --extend-every",
        Durations.human(c.killGrace()), Durations.human(c.extension()),
        Durations.human(c.extendEvery()), Durations.human(room),
        Durations.human(wanted.minus(room)), Durations.human(STOP_MARGIN_EXTRA));
    return room;
  }

  /** The long-poll wait of each loop's receive: 20 s, or half the watchdog's threshold if less. */
  static Duration receiveWait(Duration watchdog) {
    Duration max = dev.tether.mailbox.Mailbox.MAX_WAIT_TIME;
    return watchdog == null || watchdog.dividedBy(2).compareTo(max) >= 0 ? max : watchdog.dividedBy(2);
  }

  /**
   * Returns this worker's id (host and pid); each loop holds leases as {@code id/wN}.
   *
   * @return the id
   */
  public String workerId() {
    return workerId;
  }

  /**
   * Returns how many loops were still running at the group's shutdown deadline.
   *
   * @return the count; 0 before a stop or when every loop stopped in time
   */
  public int loopsInterruptedAtDeadline() {
    LoopGroup g;
    synchronized (lifecycle) {
      g = group;
    }
    return g == null ? 0 : g.interruptedAtDeadline().size();
  }

  /**
   * Returns the loops, for health and metrics.
   *
   * @return the loops
   */
  public List<MainLoop<String, String>> loops() {
    return List.copyOf(loops);
  }

  /**
   * Returns the sweep, for metrics.
   *
   * @return the sweep
   */
  public RecoverySweep sweep() {
    return sweep;
  }

  /**
   * Where to serve health probes and extra routes (the dashboard, {@code /metrics}).
   *
   * @param host the interface to bind
   * @param port the port, 0 for any free port
   * @param routes extra handlers by path
   */
  public record Health(String host, int port, Map<String, HttpHandler> routes) {}

  /**
   * Starts the loops as a {@link LoopGroup} (threads {@code tether-loop-wN}), with its health
   * server when {@code health} is given, the watchdog when configured, and the recovery sweep.
   * Returns once the loops run (and the health server listens).
   *
   * @param health where to serve health and routes, or null for no server
   * @param handleSignals whether SIGTERM/SIGINT shut the group down (the group's hook)
   * @throws IllegalStateException if already started
   * @throws IllegalArgumentException if a calibration rule is violated
   * @throws java.io.UncheckedIOException if the health port cannot be bound
   */
  public void start(Health health, boolean handleSignals) {
    LoopGroup g;
    synchronized (lifecycle) {
      if (started) {
        throw new IllegalStateException("worker " + workerId + " was already started");
      }
      started = true;
      LoopGroup.Builder b =
          LoopGroup.builder()
              .loops(loops)
              .drainTimeout(config.drainTimeout())
              .shutdownTimeout(config.shutdownTimeout())
              .handleSignals(handleSignals);
      if (config.watchdog() != null) {
        b.watchdogThreshold(config.watchdog()).watchdogInterval(config.watchdog().dividedBy(4));
      } else {
        b.noWatchdog();
      }
      if (health != null) {
        b.healthHost(health.host()).healthPort(health.port());
        health.routes().forEach(b::healthRoute);
      }
      g = b.build();
      group = g;
      groupThread =
          new Thread(
              () -> {
                try {
                  g.run();
                } catch (RuntimeException e) {
                  groupFailure.set(e);
                  if (startReturned) {
                    log.error("Worker {}: loop group failed", workerId, e);
                  } else {
                    log.debug("Worker {}: loop group failed to start", workerId, e); // rethrown
                  }
                }
              },
              "tether-group");
      groupThread.start();
    }
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (System.nanoTime() - deadline < 0) {
      if (groupFailure.get() != null) {
        throw groupFailure.get();
      }
      boolean serving = health == null || g.healthAddress().isPresent();
      if (serving && isHealthy()) {
        break;
      }
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    startReturned = true;
    if (groupFailure.get() != null) {
      throw groupFailure.get();
    }
    sweep.start();
    register();
    log.info("Worker {} started: {}", workerId, config);
    if (ProcessHandle.current().pid() == 1) {
      log.warn(PROCESS_ONE_WARNING);
    }
  }

  /**
   * Logged when the worker's JVM is process 1 of its process id namespace (a container's entry
   * point run without an init, not through the archive's {@code bin/tether}, which stays process 1
   * itself then): processes that a command leaves behind are inherited by process 1, and a JVM
   * never collects children it did not start, so each would stay a zombie, holding a process id,
   * for the life of the container.
   */
  static final String PROCESS_ONE_WARNING = "This worker's JVM is process 1 (a container's entry"
      + " point without an init): processes its commands leave behind are never collected and stay"
      + " as zombies. Start it through the release archive's bin/tether (which then stays process 1"
      + " and collects them), or under an init such as tini or docker run --init, or give a"
      + " Kubernetes pod shareProcessNamespace: true";

  /**
   * Returns the health server's address while it runs.
   *
   * @return the address, or empty
   */
  public Optional<InetSocketAddress> healthAddress() {
    synchronized (lifecycle) {
      return group == null ? Optional.empty() : group.healthAddress();
    }
  }

  /**
   * Returns whether every loop is running.
   *
   * @return true when all loops run
   */
  public boolean isHealthy() {
    for (MainLoop<String, String> loop : loops) {
      if (!loop.isRunning()) {
        return false;
      }
    }
    return !loops.isEmpty();
  }

  /**
   * Waits until the group has ended (after a stop or a signal).
   *
   * @param timeout the longest wait
   * @return true if it ended
   */
  public boolean awaitTermination(Duration timeout) {
    LoopGroup g;
    synchronized (lifecycle) {
      g = group;
    }
    return g == null || g.awaitTermination(timeout);
  }

  /**
   * Stops: drains every loop (no new items; running commands go on, extending their leases, until
   * they end or the drain timeout ends; then they are killed and their items handed back), waiting
   * for all of them within one shared {@code timeout}, then stops the sweep. Without a drain
   * timeout, running commands are killed and handed back at once. Idempotent.
   *
   * @param timeout how long to wait in total
   * @return true if every loop stopped in time
   */
  public boolean stop(Duration timeout) {
    LoopGroup g;
    synchronized (lifecycle) {
      if (stopped) {
        return true;
      }
      stopped = true;
      g = group;
    }
    boolean all = g == null || g.shutdown(timeout);
    for (JdbcMailbox<String, String> mailbox : mailboxes) {
      mailbox.close();
    }
    sweep.stop();
    probes.shutdownNow();
    dev.tether.jdbc.WorkerRegistration r;
    synchronized (lifecycle) {
      r = registration;
      registration = null;
    }
    if (r != null) {
      r.close(); // a clean stop leaves the fleet at once
    }
    log.info("Worker {} stopped{}", workerId, all ? "" : " (some loops did not finish in time)");
    return all;
  }

  /**
   * Ends the drain at once: running commands are killed and their items handed back now (as for
   * a second SIGTERM). Returns at once; a {@link #stop} under way then returns sooner. Does nothing
   * before {@link #start}.
   */
  public void stopNow() {
    LoopGroup g;
    synchronized (lifecycle) {
      g = group;
    }
    if (g != null) {
      g.shutdownNow();
    }
  }

  @Override
  public void close() {
    stop(config.shutdownTimeout());
  }

  private MainLoop.Listener loopListener() {
    return new MainLoop.Listener() {
      @Override
      public void handedBack(Message<?, ?> message) {
        safely(() -> events.handedBack(message.id()));
      }
    };
  }

  private LeaseExtender.Listener extenderListener(LeaseExtender.Listener meters) {
    return new LeaseExtender.Listener() {
      @Override
      public void extended(Message<?, ?> message, Duration extension) {
        safely(() -> meters.extended(message, extension));
        safely(() -> events.extended(message.id(), extension));
      }

      @Override
      public void extensionFailed(Message<?, ?> message, RuntimeException error) {
        safely(() -> meters.extensionFailed(message, error));
        if (events instanceof WorkerMetrics) {
          ((WorkerMetrics) events).extensionFailures.increment();
        }
      }

      @Override
      public void leaseLost(Message<?, ?> message) {
        safely(() -> meters.leaseLost(message));
      }
    };
  }

  private static void safely(Runnable r) {
    try {
      r.run();
    } catch (RuntimeException e) {
      log.warn("Worker event listener failed; ignored", e);
    }
  }

  private static String hostName() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (Exception e) {
      return "localhost";
    }
  }

  /**
   * Puts this process in the store's fleet registry ({@code tether workers}, the dashboard),
   * refreshed every {@link dev.tether.jdbc.WorkerRegistration#DEFAULT_INTERVAL} on a thread of
   * its own with the count of commands running. A worker whose store refuses the row still runs
   * (logged): the registry is for operators, not for the work.
   */
  private void register() {
    try {
      dev.tether.jdbc.WorkerRegistration r = dev.tether.jdbc.WorkerRegistration.start(
          new dev.tether.jdbc.WorkerRegistry(store),
          dev.tether.jdbc.WorkerInfo.Registration.ofThisProcess(workerId, version(), List.of(config.queue()),
              config.concurrency(), config.concurrency()),
          dev.tether.jdbc.WorkerRegistration.DEFAULT_INTERVAL, running::get);
      synchronized (lifecycle) {
        registration = r;
      }
    } catch (RuntimeException e) {
      log.warn("Worker {}: could not register in the store's worker registry ({}); it runs, but"
          + " `tether workers` and the dashboard will not list it", workerId, e.toString());
    }
  }

  /**
   * Returns the version of this build ({@code version.properties} written by Maven), or {@code
   * unknown}.
   *
   * @return the version
   */
  public static String version() {
    java.util.Properties p = new java.util.Properties();
    try (java.io.InputStream in = Worker.class.getResourceAsStream("/dev/tether/cli/version.properties")) {
      if (in != null) {
        p.load(new java.io.InputStreamReader(in, java.nio.charset.StandardCharsets.UTF_8));
      }
    } catch (java.io.IOException e) {
      return "unknown";
    }
    String v = p.getProperty("version", "").strip();
    return v.isEmpty() || v.contains("${") ? "unknown" : v;
  }

  /**
   * Returns how many commands run now.
   *
   * @return the count
   */
  public int running() {
    return running.get();
  }

  /** Runs one item's command. */
  private final class CommandHandler implements Handler<String, String> {
    @Override
    public String handle(String request, WorkContext context) throws Exception {
      running.incrementAndGet();
      try {
        return run(request, context);
      } finally {
        running.decrementAndGet();
      }
    }

    private String run(String request, WorkContext context) throws Exception {
      String id = context.messageId().orElse("?");
      CommandSpec spec;
      try {
        spec = CommandSpec.fromJson(request);
      } catch (IllegalArgumentException e) {
        throw new BadPayloadException(id, e);
      }
      safely(() -> events.started(id, context.deliveryCount(), spec));
      long start = System.nanoTime();
      CommandResult result =
          runner.run(
              spec,
              context,
              commandEnvironment(id, context),
              new LeaseProbe(context, stopMargin, probes, leaseReader),
              ProcessRunner.OutputListener.NONE);
      Duration took = Duration.ofNanos(System.nanoTime() - start);
      if (CommandResult.STOPPED_LEASE_LOST.equals(result.stopped())) {
        safely(() -> events.leaseLost(id));
        if (context.isCancelled()) {
          throw new WorkStoppedException(
              WorkStoppedException.Reason.CANCELLED, "item " + id + " was cancelled");
        }
        throw new WorkStoppedException(
            WorkStoppedException.Reason.LEASE_LOST, "lease lost on item " + id);
      }
      if (CommandResult.STOPPED_SHUTDOWN.equals(result.stopped())) {
        // the loop hands the item back and reports it (events.handedBack)
        throw new WorkStoppedException(
            WorkStoppedException.Reason.SHUTDOWN, "worker shutting down; item " + id);
      }
      safely(() -> events.finished(id, context.deliveryCount(), result, took));
      if (result.succeeded()) {
        return result.toJson();
      }
      throw new CommandFailedException(id, result);
    }
  }

  /**
   * The variables a command finds: its item, delivery and queue, its latest progress checkpoint
   * ({@code TETHER_CHECKPOINT}, empty on a fresh start; as text, or {@code base64:} when it is not
   * text), and, when the worker has {@link ChildAccess}, the lease ({@code TETHER_LEASE}), the
   * store and the {@code tether} launcher.
   */
  private Map<String, String> commandEnvironment(String id, WorkContext context) {
    Map<String, String> env = new java.util.HashMap<>();
    env.put("TETHER_ITEM_ID", id);
    env.put("TETHER_DELIVERY", Integer.toString(context.deliveryCount()));
    env.put("TETHER_QUEUE", config.queue());
    env.put("TETHER_CHECKPOINT", context.lastCheckpoint().map(Worker::checkpointVariable).orElse(""));
    if (childAccess != null) {
      env.putAll(childAccess.environment());
      context.receiptHandle().ifPresent(h -> env.put("TETHER_LEASE", h));
    }
    return env;
  }

  /** A checkpoint as an environment value: text, or {@code base64:} when not text (or with NUL). */
  static String checkpointVariable(byte[] checkpoint) {
    String text = Reports.checkpointText(checkpoint);
    return text.indexOf('\0') < 0 ? text
        : "base64:" + java.util.Base64.getEncoder().encodeToString(checkpoint);
  }

  /**
   * Tells a command's runner (polling every 100 ms or less) to stop the command because its lease
   * is gone or about to be:
   *
   * <ul>
   *   <li>the context says so (an extension or checkpoint was refused, the item was cancelled, or
   *       the lease ran out by this process's monotonic clock without a confirmed extension);
   *   <li>by that clock the lease surely holds for less than the stop margin (the time a kill takes),
   *       as when the store cannot be reached: the command is stopped so that it is gone before the
   *       store can let another worker take the item over;
   *   <li>the store says the lease is gone (the token and the store's clock), asked at most every
   *       {@link #PROBE_INTERVAL}, only after the heartbeat has been quiet that long, and on a probe
   *       thread, so that a store that stopped answering cannot hold up the checks above. A failed
   *       check is logged and retried.
   * </ul>
   *
   * <p>The same read returns the lease's work beat: when the command (or a process it delegated
   * to) recorded a beat or a checkpoint through {@code TETHER_LEASE} since the last reading, that
   * counts as a beat of the command, so the lease is extended for it as for output (on the probe
   * thread), and this process's own bound on the lease moves with that extension.
   *
   * <p>Called by one thread (the runner's); one probe in flight at a time.
   */
  private static final class LeaseProbe implements java.util.function.BooleanSupplier {
    private final WorkContext context;
    private final Duration stopMargin;
    private final java.util.concurrent.Executor probes;
    private final LeaseManager leases;
    private final long itemId;
    private final long token;
    private final boolean known;
    private java.time.Instant lastWorkBeat; // read and written by one probe at a time
    private long nextProbe = System.nanoTime();
    private java.util.concurrent.CompletableFuture<LeaseStatus> inFlight;
    private boolean lost;

    LeaseProbe(WorkContext context, Duration stopMargin, java.util.concurrent.Executor probes,
        LeaseManager leases) {
      this.context = context;
      this.stopMargin = stopMargin;
      this.probes = probes;
      this.leases = leases;
      long[] key = context.receiptHandle().map(LeaseProbe::parse).orElse(null);
      this.known = key != null;
      this.itemId = known ? key[0] : 0;
      this.token = known ? key[1] : 0;
      // No store read here (this runs on the runner's thread, which a frozen store must not
      // hold): the first probe takes the work beat as it finds it, which counts at most one beat
      // of an earlier delivery as this one's.
    }

    /**
     * One check on the probe thread: the lease's status on the store's clock and, for a lease
     * this worker can read directly, its work beat; a new work beat is beaten here, so a due
     * extension runs on this thread, not the runner's. Returns null when the check failed.
     */
    private LeaseStatus probe() {
      try {
        if (!known) {
          return context.checkLease();
        }
        LeaseCheck check = leases.inspectLease(itemId, token);
        LeaseStatus status = check.status();
        java.time.Instant beat = check.workBeatAt();
        if (status.isHeld() && beat != null && !beat.equals(lastWorkBeat)) {
          lastWorkBeat = beat;
          context.beat(); // the command's own beat, recorded in the store
        }
        return status.isHeld() ? status : context.checkLease(); // marks the context lost or cancelled
      } catch (RuntimeException e) {
        log.warn("Checking the lease of item {} failed; will retry: {}",
            context.messageId().orElse("?"), e.getMessage());
        return null;
      }
    }

    /** The item id and token of a {@code JdbcMailbox} receipt handle ({@code id:hex}), or null. */
    static long[] parse(String handle) {
      int colon = handle.indexOf(':');
      try {
        return colon < 0 ? null : new long[] {Long.parseLong(handle.substring(0, colon)),
            Long.parseUnsignedLong(handle.substring(colon + 1), 16)};
      } catch (NumberFormatException e) {
        return null;
      }
    }

    @Override
    public boolean getAsBoolean() {
      if (lost || context.isLeaseLost()) {
        return lost = true;
      }
      Optional<Duration> left = context.leaseSurelyHeldFor();
      if (left.isPresent() && left.get().compareTo(stopMargin) < 0) {
        log.warn("Item {} (delivery {}): its lease may run out in {} without a confirmed extension"
            + " (no beat, or the store cannot be reached); stopping its command now, so that it is"
            + " gone before another worker can take the item over",
            context.messageId().orElse("?"), context.deliveryCount(),
            Durations.human(left.get().isNegative() ? Duration.ZERO : left.get()));
        return lost = true;
      }
      if (inFlight != null) {
        if (!inFlight.isDone()) {
          return false;
        }
        LeaseStatus status = inFlight.getNow(null); // null: the check failed (logged)
        inFlight = null;
        if (status != null && !status.isHeld()) {
          log.warn("Item {} (delivery {}): lease {} while its command was silent; stopping it",
              context.messageId().orElse("?"), context.deliveryCount(),
              status.name().toLowerCase(java.util.Locale.ROOT));
          return lost = true;
        }
      }
      long now = System.nanoTime();
      if (now - nextProbe < 0 || context.heartbeat().elapsed().compareTo(PROBE_INTERVAL) < 0) {
        return false;
      }
      nextProbe = now + PROBE_INTERVAL.toNanos();
      try {
        inFlight = java.util.concurrent.CompletableFuture.supplyAsync(this::probe, probes);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        inFlight = null; // the worker is stopping; the checks above still run
      }
      return false;
    }
  }

  /** An item's payload is not a command this worker can run; dead-lettered at once. */
  static final class BadPayloadException extends Exception {
    private static final long serialVersionUID = 1L;

    BadPayloadException(String itemId, IllegalArgumentException cause) {
      super("item " + itemId + ": bad payload: " + cause.getMessage(), cause);
    }

    @Override
    public String toString() {
      return getMessage();
    }
  }

  /** A command exited with a non-zero status (or could not start). */
  public static final class CommandFailedException extends Exception {
    private static final long serialVersionUID = 1L;

    /** The result. */
    private final transient CommandResult result;

    CommandFailedException(String itemId, CommandResult result) {
      super(result.failureReport(FAILURE_TAIL_CHARS));
      this.result = result;
    }

    /**
     * Returns the failure report alone (what the item's error records), without the class name.
     *
     * @return the report
     */
    @Override
    public String toString() {
      return getMessage();
    }

    /**
     * Returns how the command ended.
     *
     * @return the result
     */
    public CommandResult result() {
      return result;
    }

    /**
     * Skips the stack trace: the failure is the command's, not this program's, and the message
     * says it all.
     *
     * @return this exception
     */
    @Override
    public synchronized Throwable fillInStackTrace() {
      return this;
    }
  }
}
