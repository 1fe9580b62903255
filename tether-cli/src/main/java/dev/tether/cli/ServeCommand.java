package dev.tether.cli;

import dev.tether.cli.internal.Dashboard;
import dev.tether.cli.internal.ProbedReadiness;
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
    description = "Serve the dashboard, its JSON API and /metrics without running workers, until SIGTERM or Ctrl-C.")
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
    CountDownLatch stop = new CountDownLatch(1);
    CountDownLatch closed = new CountDownLatch(1);
    try (TetherStore s = store.open(false); ProbedReadiness ready = ProbedReadiness.of(s)) {
      String token = Dashboard.tokenFromEnvOrRandom();
      // No workers call the store here: readiness probes the database itself.
      HealthServer server = new Dashboard(s, token, null, null).start(host, port, ready);
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        server.stop();
        stop.countDown();
        try { // the JVM halts when the hooks return: let the store close first
          closed.await(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }, "tether-shutdown"));
      out.println("dashboard: http://" + host + ":" + server.address().getPort() + "/");
      if (System.getenv("TETHER_TOKEN") == null) {
        out.println("token for requeue/cancel: " + token);
      }
      out.flush();
      stop.await();
    } finally {
      closed.countDown();
    }
    return TetherCli.EXIT_OK;
  }
}
