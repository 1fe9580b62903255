package dev.tether.cli.internal;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.tether.health.HealthServer;
import dev.tether.jdbc.ItemQuery;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.QueueAdmin;
import dev.tether.jdbc.QueueMonitor;
import dev.tether.loop.MainLoop;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import dev.tether.jdbc.WorkStatus;
import dev.tether.micrometer.RecoverySweepMetrics;
import dev.tether.micrometer.TetherStoreMetrics;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The dashboard: one self-contained HTML page, a JSON API and {@code /metrics}, mounted on a
 * {@link HealthServer} next to the health probes.
 *
 * <ul>
 *   <li>{@code GET /}: the page (inline CSS and JS, polls {@code /api/state} every second);
 *   <li>{@code GET /api/state}: {@link Reports#stats} plus recent and failed items;
 *   <li>{@code GET /api/item?id=N}: {@link Reports#item};
 *   <li>{@code POST /api/requeue?id=N} and {@code POST /api/cancel?id=N}: need the token in the
 *       {@code X-Tether-Token} header (or {@code Authorization: Bearer}); none gives 401, a wrong
 *       one 403, compared in constant time;
 *   <li>{@code GET /metrics}: Prometheus text format, written by Micrometer's Prometheus registry
 *       (names in {@code docs/METRICS.md}); {@code HEAD} gives the headers only.
 * </ul>
 *
 * Thread-safe; handlers run on the health server's threads.
 */
public final class Dashboard {
  private static final Logger log = LoggerFactory.getLogger(Dashboard.class);

  /** The Prometheus text format {@code /metrics} writes. */
  static final String TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8";

  private final TetherStore store;
  private final QueueMonitor monitor;
  private final byte[] token;
  private final Worker worker; // may be null (serve)
  private final PrometheusMeterRegistry registry;
  private final byte[] page;

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
    this.store = store;
    this.monitor = new QueueMonitor(store);
    this.token = token.getBytes(StandardCharsets.UTF_8);
    this.worker = worker;
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
    try (InputStream in = Dashboard.class.getResourceAsStream("/dev/tether/cli/dashboard.html")) {
      if (in == null) {
        throw new IllegalStateException("dashboard.html missing from the jar; indicates a bug");
      }
      this.page = in.readAllBytes();
    } catch (IOException e) {
      throw new IllegalStateException("cannot read dashboard.html", e);
    }
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
    String t = System.getenv("TETHER_TOKEN");
    if (t != null && !t.isBlank()) {
      return t.strip();
    }
    byte[] b = new byte[16];
    new SecureRandom().nextBytes(b);
    return HexFormat.of().formatHex(b);
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
    r.put("/", this::root);
    return r;
  }

  private void root(HttpExchange ex) throws IOException {
    String path = ex.getRequestURI().getPath();
    String method = ex.getRequestMethod();
    switch (path) {
      case "/":
      case "/index.html":
        if (!method.equals("GET") && !method.equals("HEAD")) {
          send(ex, 405, "text/plain", "GET only\n");
          return;
        }
        ex.getResponseHeaders().set("Content-Security-Policy",
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline';"
                + " connect-src 'self'; img-src 'self' data:");
        send(ex, 200, "text/html; charset=utf-8", page);
        return;
      case "/favicon.ico":
        send(ex, 204, "text/plain", new byte[0]);
        return;
      case "/api/state":
        sendJson(ex, 200, state());
        return;
      case "/api/item":
        item(ex);
        return;
      case "/api/requeue":
      case "/api/cancel":
        mutate(ex, path.substring("/api/".length()));
        return;
      default:
        sendJson(ex, 404, error("no such path: " + path));
    }
  }

  private ObjectNode state() {
    ObjectNode o = Reports.stats(store, monitor.now());
    o.set("recent", Reports.rows(monitor.items(ItemQuery.all().withLimit(30))));
    o.set("failed_items", Reports.rows(monitor.items(ItemQuery.all().withStatus(WorkStatus.FAILED).withLimit(30))));
    if (worker != null) {
      ArrayNode loops = o.putArray("loops");
      for (MainLoop<String, String> l : worker.loops()) {
        ObjectNode n = loops.addObject();
        n.put("name", l.name());
        n.put("running", l.isRunning());
        n.put("heartbeat_age_ms", l.heartbeat().elapsed().toMillis());
      }
      o.put("worker", worker.workerId());
    }
    return o;
  }

  private void item(HttpExchange ex) throws IOException {
    Optional<Long> id = idParam(ex);
    if (id.isEmpty()) {
      sendJson(ex, 400, error("give ?id=N"));
      return;
    }
    Optional<WorkItem> w = new LeaseManager(store, "tether-dashboard").find(id.get());
    if (w.isEmpty()) {
      sendJson(ex, 404, error("no item " + id.get()));
      return;
    }
    sendJson(ex, 200, Reports.item(w.get(), monitor.now()));
  }

  private void mutate(HttpExchange ex, String action) throws IOException {
    if (!ex.getRequestMethod().equals("POST")) {
      ex.getResponseHeaders().set("Allow", "POST");
      sendJson(ex, 405, error(action + " needs POST"));
      return;
    }
    String given = ex.getRequestHeaders().getFirst("X-Tether-Token");
    String auth = ex.getRequestHeaders().getFirst("Authorization");
    if (given == null && auth != null && auth.regionMatches(true, 0, "Bearer ", 0, 7)) {
      given = auth.substring(7).strip();
    }
    if (given == null || given.isEmpty()) {
      sendJson(ex, 401, error("this action needs the token (X-Tether-Token header)"));
      return;
    }
    if (!MessageDigest.isEqual(token, given.getBytes(StandardCharsets.UTF_8))) {
      log.warn("Dashboard: {} refused, wrong token from {}", action, ex.getRemoteAddress());
      sendJson(ex, 403, error("wrong token"));
      return;
    }
    Optional<Long> id = idParam(ex);
    if (id.isEmpty()) {
      sendJson(ex, 400, error("give ?id=N"));
      return;
    }
    boolean done;
    if (action.equals("requeue")) {
      done = new LeaseManager(store, "tether-dashboard").redrive(id.get());
    } else {
      done = new QueueAdmin(store).cancel(id.get(), "cancelled from the dashboard");
    }
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("id", id.get());
    o.put("action", action);
    o.put("done", done);
    if (!done) {
      o.put("error", action.equals("requeue")
          ? "only failed or cancelled items can be requeued"
          : "only pending or in-progress items can be cancelled");
    }
    log.info("Dashboard: {} item {}: {}", action, id.get(), done ? "done" : "refused");
    sendJson(ex, done ? 200 : 409, o);
  }

  private static Optional<Long> idParam(HttpExchange ex) {
    String q = ex.getRequestURI().getRawQuery();
    if (q == null) {
      return Optional.empty();
    }
    for (String part : q.split("&")) {
      int eq = part.indexOf('=');
      if (eq > 0 && part.substring(0, eq).equals("id")) {
        try {
          return Optional.of(Long.parseLong(URLDecoder.decode(part.substring(eq + 1), StandardCharsets.UTF_8)));
        } catch (NumberFormatException e) {
          return Optional.empty();
        }
      }
    }
    return Optional.empty();
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
      if (ex.getRequestMethod().equals("HEAD")) {
        // the JDK wants -1 for HEAD (a length makes it log a warning); state the GET's length
        ex.getResponseHeaders().set("Content-Length", Integer.toString(body.length));
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
