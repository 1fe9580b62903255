package dev.tether.cli;

import dev.tether.cli.internal.Dashboard;
import dev.tether.cli.internal.Durations;
import dev.tether.cli.internal.StopSignals;
import dev.tether.cli.internal.Stores;
import dev.tether.cli.internal.Worker;
import dev.tether.cli.internal.WorkerMetrics;
import dev.tether.jdbc.TetherStore;
import dev.tether.loop.MainLoop;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code tether worker}: runs items as child processes until SIGTERM or SIGINT. */
@Command(
    name = "worker",
    mixinStandardHelpOptions = true,
    description = {
      "Run items of a queue as child processes (no shell unless the item asks). Every chunk of"
          + " output is a beat that extends the lease; a silent command loses its lease and is"
          + " killed and redelivered. Exit 0 completes an item; anything else fails it, with"
          + " retries per its --max-attempts.",
      "SIGTERM or Ctrl-C stops receiving; running commands go on (their leases still extended)"
          + " for up to --drain-timeout, then are killed and their items handed back, not charged;"
          + " a second SIGTERM or Ctrl-C ends the drain at once. The exit status is then 0, or 3 if"
          + " the shutdown did not finish within --drain-timeout + --kill-grace + 5s."
    })
final class WorkerCommand implements Callable<Integer> {
  @Mixin StoreOptions store;

  @Option(names = "--queue", defaultValue = "default", description = "Queue (default: ${DEFAULT-VALUE}).")
  String queue;

  @Option(names = "--concurrency", defaultValue = "2", description = "Commands run at once (default: ${DEFAULT-VALUE}).")
  int concurrency;

  @Option(names = "--pool-size", paramLabel = "N",
      description = "Database connections the worker may hold (default: the engine's, 10 on"
          + " PostgreSQL, which also holds one listening connection). A fleet of K workers holds up to"
          + " K x (N + 1) of the server's max_connections.")
  Integer poolSize;

  @Option(names = "--visibility", defaultValue = "2m", paramLabel = "DURATION",
      description = "Lease taken on each item; a command silent this long loses it (default: ${DEFAULT-VALUE}).")
  Duration visibility;

  @Option(names = "--extend-every", defaultValue = "20s", paramLabel = "DURATION",
      description = "At most one lease extension per this interval (default: ${DEFAULT-VALUE}).")
  Duration extendEvery;

  @Option(names = "--extension", defaultValue = "90s", paramLabel = "DURATION",
      description = "How far each extension reaches; less than --visibility (default: ${DEFAULT-VALUE}).")
  Duration extension;

  @Option(names = "--kill-grace", defaultValue = "3s", paramLabel = "DURATION",
      description = "Time between SIGTERM and SIGKILL for a command that must stop (default: ${DEFAULT-VALUE}).")
  Duration killGrace;

  @Option(names = "--drain-timeout", defaultValue = "0s", paramLabel = "DURATION",
      description = "After SIGTERM, how long running commands may go on before they are killed and"
          + " handed back (default: ${DEFAULT-VALUE}: at once).")
  Duration drainTimeout;

  @Option(names = "--sweep-every", defaultValue = "30s", paramLabel = "DURATION",
      description = "Interval of the recovery sweep (default: ${DEFAULT-VALUE}).")
  Duration sweepEvery;

  @Option(names = "--health-port", paramLabel = "PORT",
      description = "Serve health, /metrics and the dashboard on this port (0: any free port).")
  Integer healthPort;

  @Option(names = "--store-metrics",
      description = "Also export the store-wide gauges on /metrics (items by queue and status,"
          + " checkpoints by kind). They read the store and are the same in every worker: turn"
          + " this on in one process, or scrape `tether serve` instead (off by default).")
  boolean storeMetrics;

  @Option(names = "--host", defaultValue = "127.0.0.1", description = "Interface for --health-port (default: ${DEFAULT-VALUE}).")
  String host;

  @Option(names = "--watchdog", paramLabel = "DURATION",
      description = "End the process if a loop stops beating this long (off by default). A command"
          + " silent for longer also counts as a stall; the calibration rules apply"
          + " (visibility > watchdog).")
  Duration watchdog;

  /**
   * The longest wait for a stopping worker, past {@code --drain-timeout} + {@code --kill-grace}:
   * the group gives up on the loops still running at its own shutdown timeout, {@code
   * --drain-timeout} + {@code --kill-grace} + 5 s (set by {@link Worker#start}); 2 s more bound the
   * end of the sweep. Loops still running then make the exit
   * status {@link TetherCli#EXIT_STOP_TIMEOUT}.
   */
  static final Duration SHUTDOWN_MARGIN = Duration.ofSeconds(7);

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    Stores.checkQueue(queue);
    if (healthPort != null && (healthPort < 0 || healthPort > 65535)) {
      throw new TetherCli.UsageException("--health-port must be 0..65535, was " + healthPort);
    }
    Worker.Config config =
        new Worker.Config(queue, concurrency, visibility, extendEvery, extension, killGrace,
            dev.tether.cli.internal.ProcessRunner.DEFAULT_TAIL_BYTES, sweepEvery, watchdog,
            drainTimeout);
    Stores.checkWritable(store.location());
    // SIGTERM/SIGINT stop the worker on this thread, which then returns the exit status; the
    // group's own JVM hook (handleSignals) stays as the fallback for what this cannot handle
    try (StopSignals signals = StopSignals.install(); TetherStore s = store.open(true, poolSize)) {
      WorkerMetrics metrics = new WorkerMetrics();
      // Micrometer is loaded only by a worker that serves /metrics
      Worker worker = new Worker(s, config, metrics, healthPort == null ? null
          : dev.tether.micrometer.TetherMetrics.builder().queues(queue).build(),
          dev.tether.cli.internal.ChildAccess.of(store.resolve(), store.schema));
      String token = Dashboard.tokenFromEnvOrRandom();
      Worker.Health health =
          healthPort == null
              ? null
              : new Worker.Health(host, healthPort, new Dashboard(s, token, worker, metrics, storeMetrics).routes());
      signals.onRepeat(worker::stopNow); // a second SIGTERM/SIGINT ends the drain at once
      worker.start(health, true);
      out.println("worker " + worker.workerId() + " on queue '" + queue + "' with " + concurrency
          + " loops (store " + store.display() + ")");
      worker.healthAddress().ifPresent(a -> {
        out.println("dashboard: http://" + host + ":" + a.getPort() + "/  (health: /health/live,"
            + " /health/ready; metrics: /metrics)");
        if (!Dashboard.tokenFromEnv()) {
          out.println(Dashboard.tokenLine("http://" + host + ":" + a.getPort() + "/", token));
        }
      });
      out.flush();
      Thread watcher = new Thread(() -> {
        while (!worker.awaitTermination(Duration.ofHours(1))) {
          // the group runs until a signal stops it (or every loop has failed)
        }
        signals.stop();
      }, "tether-worker-watch");
      watcher.setDaemon(true);
      watcher.start();
      signals.awaitStop();
      Optional<String> signal = signals.signal();
      if (signal.isEmpty()) {
        worker.stop(Duration.ZERO);
        if (jvmExiting()) {
          return TetherCli.EXIT_OK; // the group's JVM hook stopped it (SIGHUP): the JVM sets the status
        }
        throw new TetherCli.FailureException(
            "every loop of the worker ended without a stop request; see the errors logged above");
      }
      // the group reports itself ended even when it gave up on loops at its deadline: count them
      long start = System.nanoTime();
      boolean ended = worker.stop(drainTimeout.plus(killGrace).plus(SHUTDOWN_MARGIN));
      // loops still running, or that were at the group's deadline (they may have ended since,
      // in the moment the group gives interrupted loops to hand their items back)
      long stuck = Math.max(worker.loops().stream().filter(MainLoop::isRunning).count(),
          worker.loopsInterruptedAtDeadline());
      if (!ended || stuck > 0) {
        spec.commandLine().getErr().println("tether worker: error: the worker did not finish its"
            + " shutdown in time: " + stuck + " of " + concurrency + " loops still running "
            + Durations.human(Duration.ofNanos(System.nanoTime() - start)) + " after SIG"
            + signal.get() + " (see the log); their items return when their leases expire");
        return TetherCli.EXIT_STOP_TIMEOUT;
      }
      return TetherCli.EXIT_OK;
    }
  }

  /** Whether the JVM is running its shutdown hooks (it then refuses new ones). */
  private static boolean jvmExiting() {
    Thread probe = new Thread(() -> {}, "tether-exit-probe");
    try {
      Runtime.getRuntime().addShutdownHook(probe);
      Runtime.getRuntime().removeShutdownHook(probe);
      return false;
    } catch (IllegalStateException e) {
      return true;
    }
  }
}
