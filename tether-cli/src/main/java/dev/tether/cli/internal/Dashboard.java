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
import dev.tether.jdbc.SweepStatistics;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import dev.tether.jdbc.WorkStatus;
import dev.tether.loop.MainLoop;
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
 *   <li>{@code GET /metrics}: Prometheus text format.
 * </ul>
 *
 * Thread-safe; handlers run on the health server's threads.
 */
public final class Dashboard {
  private static final Logger log = LoggerFactory.getLogger(Dashboard.class);

  private final TetherStore store;
  private final QueueMonitor monitor;
  private final byte[] token;
  private final Worker worker; // may be null (serve)
  private final WorkerMetrics metrics; // may be null
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
    this.store = store;
    this.monitor = new QueueMonitor(store);
    this.token = token.getBytes(StandardCharsets.UTF_8);
    this.worker = worker;
    this.metrics = metrics;
    try (InputStream in = Dashboard.class.getResourceAsStream("/dev/tether/cli/dashboard.html")) {
      if (in == null) {
        throw new IllegalStateException("dashboard.html missing from the jar; indicates a bug");
      }
      this.page = in.readAllBytes();
    } catch (IOException e) {
      throw new IllegalStateException("cannot read dashboard.html", e);
    }
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
    StringBuilder b = new StringBuilder();
    help(b, "tether_items", "gauge", "Work items by queue and status.");
    List<QueueTotals> totals = QueueTotals.of(monitor);
    for (QueueTotals q : totals) {
      for (Map.Entry<String, Long> e :
          Map.of("pending", q.pending(), "in_progress", q.inProgress(), "completed",
              q.completed(), "failed", q.failed(), "cancelled", q.cancelled()).entrySet()) {
        b.append("tether_items{queue=\"").append(label(q.queue())).append("\",status=\"")
            .append(e.getKey()).append("\"} ").append(e.getValue()).append('\n');
      }
    }
    long deadLetters = 0;
    for (QueueTotals q : totals) {
      deadLetters += q.failed();
    }
    Map<String, Long> cps = monitor.countsByCheckpointKind();
    help(b, "tether_redeliveries_total", "counter", "Expired leases reclaimed for redelivery (lease_expired checkpoints).");
    b.append("tether_redeliveries_total ").append(cps.getOrDefault("lease_expired", 0L)).append('\n');
    help(b, "tether_dead_letters", "gauge", "Items dead-lettered: failed past their attempts, dead-lettered or cancelled.");
    b.append("tether_dead_letters ").append(deadLetters).append('\n');
    help(b, "tether_checkpoints_total", "counter", "Checkpoints by kind.");
    for (Map.Entry<String, Long> e : cps.entrySet()) {
      b.append("tether_checkpoints_total{kind=\"").append(label(e.getKey())).append("\"} ").append(e.getValue()).append('\n');
    }
    if (metrics != null) {
      counter(b, "tether_leases_extended_total", "Lease extensions after beats.", metrics.leasesExtended.sum());
      counter(b, "tether_lease_extension_failures_total", "Lease extensions that failed (other than a lost lease).", metrics.extensionFailures.sum());
      counter(b, "tether_leases_lost_total", "Leases lost while a command ran.", metrics.leasesLost.sum());
      counter(b, "tether_commands_succeeded_total", "Commands that exited 0.", metrics.succeeded.sum());
      counter(b, "tether_commands_failed_total", "Commands that failed.", metrics.failed.sum());
      counter(b, "tether_items_handed_back_total", "Items handed back on shutdown.", metrics.handedBack.sum());
      counter(b, "tether_output_chunks_total", "Output chunks read (each one a beat).", metrics.chunks.sum());
      help(b, "tether_handler_duration_seconds", "summary", "Handler durations.");
      b.append("tether_handler_duration_seconds_sum ").append(metrics.handlerMillis.sum() / 1000.0).append('\n');
      b.append("tether_handler_duration_seconds_count ").append(metrics.handlerRuns.sum()).append('\n');
      help(b, "tether_handler_duration_max_seconds", "gauge", "Longest handler duration.");
      b.append("tether_handler_duration_max_seconds ").append(metrics.handlerMaxMillis.get() / 1000.0).append('\n');
    }
    if (worker != null) {
      help(b, "tether_loop_heartbeat_age_seconds", "gauge", "Time since each loop last beat.");
      for (MainLoop<String, String> l : worker.loops()) {
        b.append("tether_loop_heartbeat_age_seconds{loop=\"").append(label(l.name())).append("\"} ")
            .append(l.heartbeat().elapsed().toMillis() / 1000.0).append('\n');
      }
      SweepStatistics s = worker.sweep().statistics();
      counter(b, "tether_sweep_scans_total", "Recovery sweep passes.", s.totalScans());
      counter(b, "tether_sweep_recovered_total", "Items requeued by the sweep.", s.totalRecovered());
      counter(b, "tether_sweep_failed_total", "Items failed by the sweep past their attempts.", s.totalFailed());
      counter(b, "tether_sweep_errors_total", "Sweep errors.", s.totalErrors());
    }
    send(ex, 200, "text/plain; version=0.0.4; charset=utf-8", b.toString());
  }

  private static void help(StringBuilder b, String name, String type, String help) {
    b.append("# HELP ").append(name).append(' ').append(help).append('\n');
    b.append("# TYPE ").append(name).append(' ').append(type).append('\n');
  }

  private static void counter(StringBuilder b, String name, String help, long v) {
    help(b, name, "counter", help);
    b.append(name).append(' ').append(v).append('\n');
  }

  private static String label(String v) {
    return v.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
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
