package dev.tether.cli;

import dev.tether.cli.internal.Dashboard;
import dev.tether.cli.internal.ProbedReadiness;
import dev.tether.cli.internal.StopSignals;
import dev.tether.health.HealthServer;
import dev.tether.jdbc.TetherStore;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code tether serve}: the dashboard, JSON API and /metrics without workers. */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    description = "Serve the dashboard, its JSON API and /metrics without running workers, until SIGTERM or Ctrl-C (then exit 0).")
final class ServeCommand implements Callable<Integer> {
  @Mixin StoreOptions store;

  @Option(names = "--port", defaultValue = "8080", description = "Port (default: ${DEFAULT-VALUE}; 0: any free port).")
  int port;

  @Option(names = "--host", defaultValue = "127.0.0.1", description = "Interface (default: ${DEFAULT-VALUE}).")
  String host;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    if (port < 0 || port > 65535) {
      throw new TetherCli.UsageException("--port must be 0..65535, was " + port);
    }
    PrintWriter out = spec.commandLine().getOut();
    CountDownLatch closed = new CountDownLatch(1);
    // SIGTERM/SIGINT release awaitStop() below: the server stops, the store closes, exit 0
    try (StopSignals signals = StopSignals.install();
        TetherStore s = store.open(false);
        ProbedReadiness ready = ProbedReadiness.of(s)) {
      String token = Dashboard.tokenFromEnvOrRandom();
      // No workers call the store here: readiness probes the database itself.
      HealthServer server = new Dashboard(s, token, null, null).start(host, port, ready);
      // What the CLI does not handle itself (SIGHUP, a JVM run with -Xrs) ends the JVM through its
      // hooks: stop the same way, and let the store close before the JVM halts.
      Thread hook = new Thread(() -> {
        signals.stop();
        try {
          closed.await(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }, "tether-shutdown");
      Runtime.getRuntime().addShutdownHook(hook);
      try {
        out.println("dashboard: http://" + host + ":" + server.address().getPort() + "/");
        if (!Dashboard.tokenFromEnv()) {
          out.println(Dashboard.tokenLine("http://" + host + ":" + server.address().getPort() + "/", token));
        }
        out.flush();
        signals.awaitStop();
      } finally {
        server.stop();
        try {
          Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
          // the JVM is exiting and the hook is running: it waits for the store to close
        }
      }
    } finally {
      closed.countDown();
    }
    return TetherCli.EXIT_OK;
  }
}
