package dev.tether.cli.internal;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.tether.dashboard.TetherDashboard;
import dev.tether.health.HealthServer;
import dev.tether.loop.MainLoop;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import dev.tether.micrometer.RecoverySweepMetrics;
import dev.tether.micrometer.TetherStoreMetrics;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The CLI's web surface, mounted on a {@link HealthServer} next to the health probes: the
 * dashboard page and its JSON API ({@link TetherDashboard} from {@code tether-dashboard}, with the
 * CLI's command display and item view, {@link Reports#item}, and this process's loops), and
 * {@code /metrics}:
 *
 * <ul>
 *   <li>{@code /} and {@code /api/...}: see {@link TetherDashboard};
 *   <li>{@code GET /metrics}: Prometheus text format, written by Micrometer's Prometheus registry
 *       (names in {@code docs/METRICS.md}); {@code HEAD} gives the headers only.
 * </ul>
 *
 * Thread-safe; handlers run on the health server's threads.
 */
public final class Dashboard {
  private static final Logger log = LoggerFactory.getLogger(Dashboard.class);

  /** How a command's JSON starts (see {@link CommandSpec#toJson}). */
  private static final String ARGV_PREFIX = "{\"argv\":[\"";

  /** The Prometheus text format {@code /metrics} writes. */
  static final String TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8";

  private final PrometheusMeterRegistry registry;
  private final TetherDashboard page;

  /**
   * Creates the dashboard.
   *
   * @param store the store to show
   * @param token the token mutating requests must carry
   * @param worker the worker of this process, or null
   * @param metrics the worker's counters, or null
   */
  public Dashboard(TetherStore store, String token, Worker worker, WorkerMetrics metrics) {
    this(store, token, worker, metrics, worker == null);
  }

  /**
   * Creates the dashboard.
   *
   * @param store the store to show
   * @param token the token mutating requests must carry
   * @param worker the worker of this process, or null
   * @param metrics the worker's counters, or null
   * @param storeMetrics whether {@code /metrics} exports the store-wide gauges (items by queue and
   *     status, checkpoints by kind): the same in every process, so one process should
   */
  public Dashboard(TetherStore store, String token, Worker worker, WorkerMetrics metrics,
      boolean storeMetrics) {
    this.registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    if (worker != null) {
      worker.metrics().ifPresent(m -> m.bindTo(registry));
      new RecoverySweepMetrics(worker.sweep()).bindTo(registry);
    }
    if (metrics != null) {
      commandCounter("tether.commands.succeeded", "Commands that exited 0", metrics, m -> m.succeeded.sum());
      commandCounter("tether.commands.failed", "Commands that failed", metrics, m -> m.failed.sum());
      commandCounter("tether.output.chunks", "Output chunks read from commands (each one a beat)",
          metrics, m -> m.chunks.sum());
    }
    if (storeMetrics) {
      new TetherStoreMetrics(store).bindTo(registry);
    }
    this.page = TetherDashboard.builder(store)
        .token(token)
        .itemView(new TetherDashboard.ItemView() {
          @Override
          public String summary(WorkItem item) {
            String input = Reports.inputOf(item);
            String command = Reports.commandOf(input);
            // a listing reads only the input's first bytes: a longer command's JSON is cut and does
            // not parse; show its start rather than the JSON around it
            if (command == input && input != null && input.startsWith(ARGV_PREFIX)
                && input.length() >= dev.tether.jdbc.OverviewQueries.INPUT_PREFIX_BYTES / 2) {
              return input.substring(ARGV_PREFIX.length());
            }
            return command;
          }

          @Override
          public ObjectNode detail(WorkItem item, Instant now) {
            return Reports.item(item, now);
          }
        })
        .local(worker == null ? null : () -> local(worker))
        .build();
  }

  /** What this process knows of itself: its worker id and its loops. */
  private static ObjectNode local(Worker worker) {
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("worker", worker.workerId());
    o.put("running", worker.running());
    ArrayNode loops = o.putArray("loops");
    for (MainLoop<String, String> l : worker.loops()) {
      ObjectNode n = loops.addObject();
      n.put("name", l.name());
      n.put("running", l.isRunning());
      n.put("heartbeat_age_ms", l.heartbeat().elapsed().toMillis());
    }
    return o;
  }

  private void commandCounter(String name, String description, WorkerMetrics metrics,
      java.util.function.ToDoubleFunction<WorkerMetrics> count) {
    FunctionCounter.builder(name, metrics, count).description(description).register(registry);
  }

  /**
   * Returns a token from {@code TETHER_TOKEN}, or a random one.
   *
   * @return the token
   */
  public static String tokenFromEnvOrRandom() {
    if (tokenFromEnv()) {
      return System.getenv("TETHER_TOKEN").strip();
    }
    byte[] b = new byte[16];
    new SecureRandom().nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  /**
   * Whether {@code TETHER_TOKEN} gives the token (set and not blank); otherwise the process makes a
   * random one, which it prints.
   *
   * @return true when the token comes from the environment
   */
  public static boolean tokenFromEnv() {
    String t = System.getenv("TETHER_TOKEN");
    return t != null && !t.isBlank();
  }

  /**
   * The line that says a random token: the token, and the dashboard's address with it, which
   * opens the page with the token given.
   *
   * @param base the dashboard's address, ending with {@code /}
   * @param token the token
   * @return the line
   */
  public static String tokenLine(String base, String token) {
    return "dashboard token: " + token + " (reads, requeue and cancel need it; or open "
        + linkWithToken(base, token) + "; set TETHER_TOKEN to choose it)";
  }

  /**
   * The dashboard's address that gives the page its token ({@code #token=}, encoded).
   *
   * @param base the dashboard's address, ending with {@code /}
   * @param token the token
   * @return the link
   */
  public static String linkWithToken(String base, String token) {
    return base + "#token="
        + java.net.URLEncoder.encode(token, java.nio.charset.StandardCharsets.UTF_8).replace("+", "%20");
  }

  /**
   * Builds and starts a health server with the dashboard mounted.
   *
   * @param host the interface to bind
   * @param port the port (0: any free port)
   * @param ready the readiness check
   * @return the running server
   */
  public HealthServer start(String host, int port, BooleanSupplier ready) {
    HealthServer.Builder b = HealthServer.builder().host(host).port(port).readinessCheck(ready);
    routes().forEach(b::route);
    HealthServer server = b.build();
    server.start();
    return server;
  }

  /**
   * Returns the handlers to mount: {@code /metrics} and {@code /} (page and API).
   *
   * @return handlers by path
   */
  public Map<String, HttpHandler> routes() {
    Map<String, HttpHandler> r = new LinkedHashMap<>();
    r.put("/metrics", this::metrics);
    r.put("/", page);
    return r;
  }

  private void metrics(HttpExchange ex) throws IOException {
    if (!ex.getRequestURI().getPath().equals("/metrics")) {
      sendJson(ex, 404, error("no such path"));
      return;
    }
    String method = ex.getRequestMethod();
    if (!method.equals("GET") && !method.equals("HEAD")) {
      ex.getResponseHeaders().set("Allow", "GET, HEAD");
      send(ex, 405, "text/plain", "GET or HEAD only\n");
      return;
    }
    send(ex, 200, TEXT_FORMAT, registry.scrape(TEXT_FORMAT));
  }

  /**
   * Returns the registry {@code /metrics} exposes, for tests and for more binders.
   *
   * @return the registry
   */
  public PrometheusMeterRegistry registry() {
    return registry;
  }

  private static ObjectNode error(String message) {
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("error", message);
    return o;
  }

  private static void sendJson(HttpExchange ex, int status, Object body) throws IOException {
    send(ex, status, "application/json", Json.MAPPER.writeValueAsBytes(body));
  }

  private static void send(HttpExchange ex, int status, String type, String body) throws IOException {
    send(ex, status, type, body.getBytes(StandardCharsets.UTF_8));
  }

  private static void send(HttpExchange ex, int status, String type, byte[] body) throws IOException {
    try (ex) {
      ex.getResponseHeaders().set("Content-Type", type);
      ex.getResponseHeaders().set("Cache-Control", "no-store");
      ex.getResponseHeaders().set("X-Content-Type-Options", "nosniff");
      if (status == 204 || "HEAD".equals(ex.getRequestMethod())) {
        // a HEAD answer has no body: a length here makes the JDK's server log a warning
        ex.sendResponseHeaders(status, -1);
        return;
      }
      ex.sendResponseHeaders(status, body.length);
      try (OutputStream out = ex.getResponseBody()) {
        out.write(body);
      }
    }
  }
}
