package dev.tether.cli.internal;

import dev.tether.LeaseExtender;
import dev.tether.LeaseExtenderConfig;
import com.sun.net.httpserver.HttpHandler;
import dev.tether.Codec;
import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.RecoverySweep;
import dev.tether.jdbc.RecoverySweepConfig;
import dev.tether.jdbc.TetherStore;
import dev.tether.loop.Handler;
import dev.tether.loop.LoopGroup;
import dev.tether.loop.MainLoop;
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
 * the store cannot be reached). {@link #stop} hands running items back at once, without charging
 * their attempt.
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
      Duration watchdog) {
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
     * @throws IllegalArgumentException naming the value and the rule
     */
    public Config {
      Objects.requireNonNull(queue, "queue");
      if (concurrency < 1 || concurrency > 64) {
        throw new IllegalArgumentException("--concurrency must be 1..64, was " + concurrency);
      }
      positive("--visibility", visibility);
      positive("--extend-every", extendEvery);
      positive("--extension", extension);
      if (extendEvery.compareTo(extension.dividedBy(2)) >= 0) {
        throw new IllegalArgumentException(
            "--extend-every ("
                + Durations.human(extendEvery)
                + ") must be less than half of --extension ("
                + Durations.human(extension)
                + "), or a lease can expire between two extensions");
      }
      if (extension.compareTo(visibility) >= 0) {
        throw new IllegalArgumentException(
            "--extension ("
                + Durations.human(extension)
                + ") must be less than --visibility ("
                + Durations.human(visibility)
                + ") (calibration rule extension < visibility_timeout)");
      }
      if (watchdog != null) {
        positive("--watchdog", watchdog);
      }
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
        throw new IllegalArgumentException(name + " must be > 0, was " + d);
      }
    }
  }

  private final TetherStore store;
  private final Config config;
  private final WorkerEvents events;
  private final String workerId;
  private final ProcessRunner runner;
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

  /**
   * Creates a worker.
   *
   * @param store the store (not closed by the worker)
   * @param config the configuration
   * @param events observer of items
   */
  public Worker(TetherStore store, Config config, WorkerEvents events) {
    this.store = store;
    this.config = config;
    this.events = events;
    this.workerId = hostName() + ":" + ProcessHandle.current().pid();
    this.runner = new ProcessRunner(config.tailBytes(), config.killGrace(), config.extendEvery());
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
              .listener(loopListener())
              .extenderListener(extenderListener())
              .build();
      loops.add(loop);
    }
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
              .shutdownTimeout(config.killGrace().plusSeconds(5))
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
    log.info("Worker {} started: {}", workerId, config);
  }

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
   * Stops: asks every loop to stop (running commands are killed and their items handed back at
   * once), then waits for all of them within one shared {@code timeout}, then stops the sweep.
   * Idempotent.
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
    log.info("Worker {} stopped{}", workerId, all ? "" : " (some loops did not finish in time)");
    return all;
  }

  @Override
  public void close() {
    stop(config.killGrace().plusSeconds(5));
  }

  private MainLoop.Listener loopListener() {
    return new MainLoop.Listener() {
      @Override
      public void handedBack(Message<?, ?> message) {
        safely(() -> events.handedBack(message.id()));
      }
    };
  }

  private LeaseExtender.Listener extenderListener() {
    return new LeaseExtender.Listener() {
      @Override
      public void extended(Message<?, ?> message, Duration extension) {
        safely(() -> events.extended(message.id(), extension));
      }

      @Override
      public void extensionFailed(Message<?, ?> message, RuntimeException error) {
        if (events instanceof WorkerMetrics) {
          ((WorkerMetrics) events).extensionFailures.increment();
        }
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

  /** Runs one item's command. */
  private final class CommandHandler implements Handler<String, String> {
    @Override
    public String handle(String request, WorkContext context) throws Exception {
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
              Map.of(
                  "TETHER_ITEM_ID", id,
                  "TETHER_DELIVERY", Integer.toString(context.deliveryCount()),
                  "TETHER_QUEUE", config.queue()),
              new LeaseProbe(context),
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
        safely(() -> events.handedBack(id));
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
   * Tells whether a silent command's lease is gone, by asking the store (the token and the
   * store's clock, {@link WorkContext#checkLease()}) at most every {@link #PROBE_INTERVAL}, and
   * only after the heartbeat has been quiet for that long. A failed check (the store cannot be
   * reached) is logged and left to the context's own signal, which turns true once the lease ran
   * out by this process's clock.
   */
  private static final class LeaseProbe implements java.util.function.BooleanSupplier {
    private final WorkContext context;
    private long nextProbe = System.nanoTime();
    private boolean lost;

    LeaseProbe(WorkContext context) {
      this.context = context;
    }

    @Override
    public boolean getAsBoolean() {
      if (lost || context.isLeaseLost()) {
        return lost = true;
      }
      long now = System.nanoTime();
      if (now - nextProbe < 0 || context.heartbeat().elapsed().compareTo(PROBE_INTERVAL) < 0) {
        return false;
      }
      nextProbe = now + PROBE_INTERVAL.toNanos();
      try {
        LeaseStatus status = context.checkLease();
        if (!status.isHeld()) {
          lost = true;
          log.warn("Item {} (delivery {}): lease {} while its command was silent; stopping it",
              context.messageId().orElse("?"), context.deliveryCount(),
              status.name().toLowerCase(java.util.Locale.ROOT));
        }
      } catch (RuntimeException e) {
        log.warn("Checking the lease of item {} failed; will retry: {}",
            context.messageId().orElse("?"), e.getMessage());
      }
      return lost;
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
