package dev.tether.dashboard;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.tether.jdbc.CappedCount;
import dev.tether.jdbc.ItemPage;
import dev.tether.jdbc.ItemPageRequest;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.OverviewQueries;
import dev.tether.jdbc.QueueAdmin;
import dev.tether.jdbc.StoreOverview;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.ThroughputMinute;
import dev.tether.jdbc.WorkItem;
import dev.tether.jdbc.WorkStatus;
import dev.tether.jdbc.WorkerInfo;
import dev.tether.jdbc.WorkerRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The dashboard of a {@link TetherStore} as a JDK {@link HttpHandler}: one self-contained page
 * and a JSON API, mountable on any {@code com.sun.net.httpserver.HttpServer} (or Tether's {@code
 * HealthServer}) at any context path:
 *
 * <pre>{@code
 * HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 8080), 0);
 * server.createContext("/tether/", TetherDashboard.builder(store).token(System.getenv("TETHER_TOKEN")).build());
 * server.start(); // http://127.0.0.1:8080/tether/
 * }</pre>
 *
 * <p>Paths, relative to the context path:
 *
 * <ul>
 *   <li>{@code GET /}: the page; it polls {@code api/state} every second, {@code api/throughput}
 *       every 15 s, and opens {@code #item=ID} (or {@code ?item=ID}) when loaded; a link ending
 *       in {@code #token=T} gives it the token (kept in the tab's session storage, and taken out
 *       of the address bar at once). It may not be framed;
 *   <li>{@code GET api/state?queue=&status=&q=&before=&limit=}: counts capped at {@link
 *       Builder#countCap} (per queue and status, from the indexes), the in-flight, failed and
 *       scheduled/retrying items (a few each), the fleet ({@link WorkerRegistry}), and one keyset
 *       page of items with the filters (see {@link ItemPageRequest}; {@code before} is the previous
 *       answer's {@code items.next_before});
 *   <li>{@code GET api/throughput?minutes=N}: completed, failed and redelivered per minute (read
 *       from at most {@link Builder#throughputRows} index entries per series, kept for 10 s);
 *   <li>{@code GET api/item?id=N}: one item with its history ({@link ItemView#detail});
 *   <li>{@code GET api/workers}: the fleet;
 *   <li>{@code POST api/requeue?id=N} and {@code POST api/cancel?id=N}: need the token in the
 *       {@code X-Tether-Token} header (or {@code Authorization: Bearer}); none gives 401, a wrong one
 *       403 (compared in constant time); without a configured token they are refused with 403.
 * </ul>
 *
 * <p>With a token configured, every {@code api/} read needs it as well (items hold commands,
 * their environment, output and errors); without one, reads are open to whoever reaches the
 * server, so bind it to a loopback address.
 *
 * <p>Every poll's store work is bounded by what it returns, never by the store's size: 8 short
 * indexed statements on one connection ({@link OverviewQueries#overview}; measured figures on a
 * 1,000,000-item store in {@code docs/PERFORMANCE.md}). Mount it on a JVM started with {@code
 * -Dsun.net.httpserver.nodelay=true}: the JDK server otherwise holds each answer ~40 ms for the
 * client's delayed ACK. Thread-safe; starts no threads (requests run on the server's).
 */
public final class TetherDashboard implements HttpHandler {
  private static final Logger log = LoggerFactory.getLogger(TetherDashboard.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration THROUGHPUT_TTL = Duration.ofSeconds(10);

  /** Characters of a command or error a list row carries: {@value}. */
  public static final int ROW_TEXT_CHARS = 160;

  /**
   * How items are shown: a one-line summary in lists, and the detail view. The default shows the
   * input as text; the CLI plugs in its command display and result.
   */
  public interface ItemView {
    /**
     * Returns the text of an item's list row (its command or input); cut to {@value
     * #ROW_TEXT_CHARS} characters by the dashboard.
     *
     * @param item the item; its input is at most the first {@link
     *     OverviewQueries#INPUT_PREFIX_BYTES} bytes
     * @return the text
     */
    String summary(WorkItem item);

    /**
     * Returns the detail JSON of one item (read whole, with its checkpoints).
     *
     * @param item the item
     * @param now the store's instant, for ages
     * @return the JSON object
     */
    ObjectNode detail(WorkItem item, Instant now);
  }

  private final TetherStore store;
  private final OverviewQueries overview;
  private final WorkerRegistry registry;
  private final byte[] token; // null: mutations refused
  private final ItemView view;
  private final Supplier<ObjectNode> local;
  private final int pageSize;
  private final int countCap;
  private final int maxQueues;
  private final int listSize;
  private final int throughputRows;
  private final Clock clock;
  private final byte[] page;
  private final Object throughputLock = new Object();
  private Instant throughputAt; // guarded by throughputLock
  private int throughputMinutes; // guarded by throughputLock
  private byte[] throughputBody; // guarded by throughputLock

  private TetherDashboard(Builder b) {
    this.store = b.store;
    this.overview = new OverviewQueries(b.store);
    this.registry = new WorkerRegistry(b.store);
    this.token = b.token == null ? null : b.token.getBytes(StandardCharsets.UTF_8);
    this.view = b.view != null ? b.view : new DefaultItemView();
    this.local = b.local;
    this.pageSize = b.pageSize;
    this.countCap = b.countCap;
    this.maxQueues = b.maxQueues;
    this.listSize = b.listSize;
    this.throughputRows = b.throughputRows;
    this.clock = b.clock;
    try (InputStream in = TetherDashboard.class.getResourceAsStream("dashboard.html")) {
      if (in == null) {
        throw new IllegalStateException("dashboard.html missing from the jar; indicates a bug");
      }
      this.page = in.readAllBytes();
    } catch (IOException e) {
      throw new IllegalStateException("cannot read dashboard.html", e);
    }
  }

  /**
   * Starts a builder.
   *
   * @param store the store to show
   * @return the builder
   */
  public static Builder builder(TetherStore store) {
    return new Builder(store);
  }

  /** Builds a {@link TetherDashboard}; not thread-safe. */
  public static final class Builder {
    private final TetherStore store;
    private String token;
    private ItemView view;
    private Supplier<ObjectNode> local;
    private int pageSize = 20;
    private int countCap = 1000;
    private int maxQueues = 20;
    private int listSize = 10;
    private int throughputRows = 10_000;
    private Clock clock = Clock.systemUTC();

    private Builder(TetherStore store) {
      this.store = Objects.requireNonNull(store, "store");
    }

    /**
     * Sets the token that requeue and cancel need, and every {@code api/} read (none: requeue
     * and cancel are refused, and reads are open).
     *
     * @param token the token, or null
     * @return this builder
     */
    public Builder token(String token) {
      this.token = token == null || token.isBlank() ? null : token.strip();
      return this;
    }

    /**
     * Sets how items are shown (default: their input as text).
     *
     * @param view the view
     * @return this builder
     */
    public Builder itemView(ItemView view) {
      this.view = Objects.requireNonNull(view, "view");
      return this;
    }

    /**
     * Adds a {@code local} object to every {@code api/state} answer: what this process knows of
     * itself (the CLI worker: its loops). Called once per poll; keep it cheap.
     *
     * @param local the supplier, or null
     * @return this builder
     */
    public Builder local(Supplier<ObjectNode> local) {
      this.local = local;
      return this;
    }

    /**
     * Sets the default and largest page of items (default 20; at most {@link
     * ItemPageRequest#MAX_LIMIT}).
     *
     * @param n items per page
     * @return this builder
     */
    public Builder pageSize(int n) {
      this.pageSize = range(n, 1, ItemPageRequest.MAX_LIMIT, "pageSize");
      return this;
    }

    /**
     * Sets where counts stop (default 1,000: "1,000+").
     *
     * @param cap the cap
     * @return this builder
     */
    public Builder countCap(int cap) {
      this.countCap = range(cap, 1, 1_000_000, "countCap");
      return this;
    }

    /**
     * Sets how many queues the counts cover (default 20, in name order).
     *
     * @param n most queues
     * @return this builder
     */
    public Builder maxQueues(int n) {
      this.maxQueues = range(n, 1, 1000, "maxQueues");
      return this;
    }

    /**
     * Sets how many in-flight, failed and scheduled items a poll shows (default 10 each).
     *
     * @param n items per list
     * @return this builder
     */
    public Builder listSize(int n) {
      this.listSize = range(n, 1, 200, "listSize");
      return this;
    }

    /**
     * Sets the most index entries the throughput chart reads per series (default 10,000).
     *
     * @param n rows
     * @return this builder
     */
    public Builder throughputRows(int n) {
      this.throughputRows = range(n, 1, 1_000_000, "throughputRows");
      return this;
    }

    /**
     * Sets the clock of the throughput cache (tests).
     *
     * @param clock the clock
     * @return this builder
     */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /**
     * Builds the dashboard.
     *
     * @return the dashboard
     */
    public TetherDashboard build() {
      return new TetherDashboard(this);
    }

    private static int range(int n, int min, int max, String name) {
      if (n < min || n > max) {
        throw new IllegalArgumentException(name + " must be in " + min + ".." + max + ", was " + n);
      }
      return n;
    }
  }

  @Override
  public void handle(HttpExchange ex) throws IOException {
    try {
      route(ex);
    } catch (BadRequest e) {
      sendJson(ex, 400, error(e.getMessage()));
    } catch (RuntimeException e) {
      log.warn("Dashboard: {} {} failed: {}", ex.getRequestMethod(), ex.getRequestURI().getPath(), e.toString());
      log.debug("Dashboard request failure", e);
      sendJson(ex, 503, error("the store could not answer: " + e.getMessage()));
    }
  }

  private void route(HttpExchange ex) throws IOException {
    String path = ex.getRequestURI().getPath();
    String context = ex.getHttpContext().getPath();
    String rel = path.startsWith(context) ? path.substring(context.length()) : path;
    if (rel.startsWith("/")) {
      rel = rel.substring(1);
    }
    String method = ex.getRequestMethod();
    boolean read = method.equals("GET") || method.equals("HEAD");
    switch (rel) {
      case "":
      case "index.html":
        if (!read) {
          ex.getResponseHeaders().set("Allow", "GET, HEAD");
          send(ex, 405, "text/plain", "GET only\n".getBytes(StandardCharsets.UTF_8));
          return;
        }
        ex.getResponseHeaders().set("Content-Security-Policy",
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline';"
                + " connect-src 'self'; img-src 'self' data:; frame-ancestors 'none';"
                + " base-uri 'none'; form-action 'none'");
        ex.getResponseHeaders().set("X-Frame-Options", "DENY");
        send(ex, 200, "text/html; charset=utf-8", page);
        return;
      case "favicon.ico":
        send(ex, 204, "text/plain", new byte[0]);
        return;
      case "api/requeue":
      case "api/cancel":
        mutate(ex, rel.substring("api/".length()));
        return;
      default:
        break;
    }
    if (!rel.startsWith("api/")) {
      sendJson(ex, 404, error("no such path: " + path));
      return;
    }
    if (!read) {
      ex.getResponseHeaders().set("Allow", "GET, HEAD");
      sendJson(ex, 405, error(rel + " needs GET"));
      return;
    }
    // items hold commands, their environment and output: with a token, reading needs it too
    if (token != null && !tokenGiven(ex, rel, false)) {
      return;
    }
    Map<String, String> q = query(ex);
    switch (rel) {
      case "api/state":
        sendJson(ex, 200, state(q));
        return;
      case "api/throughput":
        send(ex, 200, "application/json", throughput(intParam(q, "minutes", 30, 1, 360)));
        return;
      case "api/item":
        item(ex, q);
        return;
      case "api/workers":
        sendJson(ex, 200, workers());
        return;
      default:
        sendJson(ex, 404, error("no such path: " + path));
    }
  }

  /**
   * Returns the {@code api/state} answer for the given parameters (also for tests and for callers
   * that serve it another way).
   *
   * @param params {@code queue}, {@code status}, {@code q}, {@code before}, {@code limit}
   * @return the JSON object
   * @throws IllegalArgumentException if a parameter is malformed
   */
  public ObjectNode state(Map<String, String> params) {
    ItemPageRequest request = pageRequest(params);
    StoreOverview v = overview.overview(request, countCap, maxQueues, listSize);
    Instant now = v.now();
    ObjectNode o = JSON.createObjectNode();
    o.put("generated_at", now.toString());
    o.put("count_cap", countCap);
    o.set("totals", counts(v.totals()));
    ArrayNode qs = o.putArray("queues");
    v.counts().forEach((name, counts) -> {
      ObjectNode n = qs.addObject();
      n.put("queue", name);
      n.set("counts", counts(counts));
    });
    o.put("queues_more", v.moreQueues());
    o.set("in_flight", inFlight(v.inFlight(), now));
    o.set("failed_items", rows(v.failed()));
    o.set("scheduled", rows(v.scheduled()));
    ArrayNode workers = o.putArray("workers");
    v.workers().forEach(w -> workers.add(workerJson(w)));
    ItemPage p = v.page();
    ObjectNode items = o.putObject("items");
    ObjectNode filter = items.putObject("filter");
    filter.put("queue", request.queue());
    filter.put("status", request.status() == null ? null : request.status().dbValue());
    filter.put("q", request.text());
    filter.put("before", request.beforeId());
    filter.put("limit", request.limit());
    items.set("rows", rows(p.items()));
    items.put("next_before", p.nextBeforeId());
    items.put("search_incomplete", p.searchIncomplete());
    items.put("text_scan_rows", ItemPageRequest.TEXT_SCAN_ROWS);
    if (local != null) {
      o.set("local", local.get());
    }
    return o;
  }

  private ItemPageRequest pageRequest(Map<String, String> q) {
    String queue = blankToNull(q.get("queue"));
    String statusText = blankToNull(q.get("status"));
    WorkStatus status = null;
    if (statusText != null) {
      try {
        status = WorkStatus.fromDb(statusText.toLowerCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw new BadRequest("unknown status '" + statusText + "': give pending, in_progress, completed, failed or cancelled");
      }
    }
    String text = blankToNull(q.get("q"));
    if (text != null && text.length() > 200) {
      throw new BadRequest("the search text is limited to 200 characters");
    }
    String before = blankToNull(q.get("before"));
    Long beforeId = null;
    if (before != null) {
      beforeId = longParam(before, "before");
      if (beforeId < 1) {
        throw new BadRequest("before must be a positive item id");
      }
    }
    int limit = intParam(q, "limit", pageSize, 1, pageSize);
    return new ItemPageRequest(queue, status, text, beforeId, limit);
  }

  private ObjectNode counts(Map<WorkStatus, CappedCount> counts) {
    ObjectNode o = JSON.createObjectNode();
    counts.forEach((s, c) -> {
      ObjectNode n = o.putObject(s.dbValue());
      n.put("n", c.count());
      n.put("capped", c.capped());
    });
    return o;
  }

  private ArrayNode rows(List<WorkItem> items) {
    ArrayNode a = JSON.createArrayNode();
    for (WorkItem w : items) {
      a.add(row(w));
    }
    return a;
  }

  private ObjectNode row(WorkItem w) {
    ObjectNode o = JSON.createObjectNode();
    o.put("id", w.id());
    o.put("queue", w.queue());
    o.put("status", w.status().dbValue());
    o.put("attempts", w.attempts());
    o.put("max_attempts", w.maxAttempts());
    o.put("delivery_count", w.deliveryCount());
    o.put("created_at", str(w.createdAt()));
    if (w.completedAt() != null) {
      o.put("completed_at", str(w.completedAt()));
    }
    if (w.status() == WorkStatus.PENDING) {
      o.put("available_at", str(w.availableAt()));
    }
    if (w.errorMessage() != null) {
      o.put("error", cut(w.errorMessage()));
    }
    o.put("command", cut(view.summary(w)));
    return o;
  }

  private ArrayNode inFlight(List<WorkItem> items, Instant now) {
    ArrayNode a = JSON.createArrayNode();
    for (WorkItem w : items) {
      ObjectNode o = row(w);
      o.put("holder", w.leaseHolder());
      o.put("heartbeat_age_ms", w.heartbeatAt() == null ? null : Math.max(0, Duration.between(w.heartbeatAt(), now).toMillis()));
      o.put("lease_left_ms", w.leaseExpiresAt() == null ? null : Duration.between(now, w.leaseExpiresAt()).toMillis());
      a.add(o);
    }
    return a;
  }

  private ArrayNode workers() {
    ArrayNode a = JSON.createArrayNode();
    for (WorkerInfo w : registry.list()) {
      a.add(workerJson(w));
    }
    return a;
  }

  /**
   * One worker of the fleet as JSON (the shape of {@code api/workers}, {@code tether workers
   * --json} and the {@code workers} field of {@code tether stats --json}).
   *
   * @param w the worker
   * @return the JSON object
   */
  public static ObjectNode workerJson(WorkerInfo w) {
    ObjectNode o = JSON.createObjectNode();
    o.put("worker_id", w.workerId());
    o.put("host", w.host());
    o.put("pid", w.pid());
    o.put("version", w.version());
    ArrayNode qs = o.putArray("queues");
    w.queues().forEach(qs::add);
    o.put("loops", w.loops());
    o.put("concurrency", w.concurrency());
    o.put("in_flight", w.inFlight());
    o.put("started_at", str(w.startedAt()));
    o.put("last_seen_at", str(w.lastSeenAt()));
    o.put("last_seen_ms", w.sinceSeen().toMillis());
    o.put("refresh_ms", w.refreshInterval().toMillis());
    o.put("state", w.gone() ? "gone" : "alive");
    return o;
  }

  private byte[] throughput(int minutes) throws IOException {
    synchronized (throughputLock) {
      Instant t = clock.instant();
      if (throughputBody != null && throughputMinutes == minutes
          && Duration.between(throughputAt, t).compareTo(THROUGHPUT_TTL) < 0) {
        return throughputBody;
      }
      ObjectNode o = JSON.createObjectNode();
      o.put("max_rows", throughputRows);
      ArrayNode a = o.putArray("minutes");
      for (ThroughputMinute m : overview.throughput(minutes, throughputRows)) {
        ObjectNode n = a.addObject();
        n.put("minute", m.minute().toString());
        n.put("completed", m.completed());
        n.put("failed", m.failed());
        n.put("redelivered", m.redelivered());
        n.put("partial", m.partial());
      }
      throughputBody = JSON.writeValueAsBytes(o);
      throughputAt = t;
      throughputMinutes = minutes;
      return throughputBody;
    }
  }

  private void item(HttpExchange ex, Map<String, String> q) throws IOException {
    String id = blankToNull(q.get("id"));
    if (id == null) {
      throw new BadRequest("give ?id=N");
    }
    long n = longParam(id, "id");
    Optional<WorkItem> w = new LeaseManager(store, "tether-dashboard").find(n);
    if (w.isEmpty()) {
      sendJson(ex, 404, error("no item " + n));
      return;
    }
    sendJson(ex, 200, view.detail(w.get(), overview.now()));
  }

  /**
   * Whether the request carries the configured token (in {@code X-Tether-Token} or {@code
   * Authorization: Bearer}); if not, answers 401 (none given) or 403 (a wrong one, compared in
   * constant time) and returns false. Only with a token configured.
   */
  private boolean tokenGiven(HttpExchange ex, String what, boolean mutation) throws IOException {
    String given = ex.getRequestHeaders().getFirst("X-Tether-Token");
    String auth = ex.getRequestHeaders().getFirst("Authorization");
    if (given == null && auth != null && auth.regionMatches(true, 0, "Bearer ", 0, 7)) {
      given = auth.substring(7).strip();
    }
    if (given == null || given.isEmpty()) {
      sendJson(ex, 401, error(what + " needs the token (X-Tether-Token header)"));
      return false;
    }
    if (!MessageDigest.isEqual(token, given.getBytes(StandardCharsets.UTF_8))) {
      if (mutation) {
        log.warn("Dashboard: {} refused, wrong token from {}", what, ex.getRemoteAddress());
      } else {
        // a tab left open with an old token polls every second: no warning each time
        log.debug("Dashboard: {} refused, wrong token from {}", what, ex.getRemoteAddress());
      }
      sendJson(ex, 403, error("wrong token"));
      return false;
    }
    return true;
  }

  private void mutate(HttpExchange ex, String action) throws IOException {
    if (!ex.getRequestMethod().equals("POST")) {
      ex.getResponseHeaders().set("Allow", "POST");
      sendJson(ex, 405, error(action + " needs POST"));
      return;
    }
    if (token == null) {
      sendJson(ex, 403, error(action + " is disabled: this dashboard has no token configured"));
      return;
    }
    if (!tokenGiven(ex, action, true)) {
      return;
    }
    String idText = blankToNull(query(ex).get("id"));
    if (idText == null) {
      throw new BadRequest("give ?id=N");
    }
    long id = longParam(idText, "id");
    boolean done = action.equals("requeue")
        ? new LeaseManager(store, "tether-dashboard").redrive(id)
        : new QueueAdmin(store).cancel(id, "cancelled from the dashboard");
    ObjectNode o = JSON.createObjectNode();
    o.put("id", id);
    o.put("action", action);
    o.put("done", done);
    if (!done) {
      o.put("error", action.equals("requeue")
          ? "only failed or cancelled items can be requeued"
          : "only pending or in-progress items can be cancelled");
    }
    log.info("Dashboard: {} item {}: {}", action, id, done ? "done" : "refused");
    sendJson(ex, done ? 200 : 409, o);
  }

  private static Map<String, String> query(HttpExchange ex) {
    Map<String, String> out = new HashMap<>();
    String q = ex.getRequestURI().getRawQuery();
    if (q == null) {
      return out;
    }
    for (String part : q.split("&")) {
      int eq = part.indexOf('=');
      if (eq > 0) {
        try {
          out.putIfAbsent(URLDecoder.decode(part.substring(0, eq), StandardCharsets.UTF_8),
              URLDecoder.decode(part.substring(eq + 1), StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
          throw new BadRequest("malformed query string");
        }
      }
    }
    return out;
  }

  private static long longParam(String v, String name) {
    try {
      return Long.parseLong(v.strip());
    } catch (NumberFormatException e) {
      throw new BadRequest(name + " must be a number, was '" + v + "'");
    }
  }

  private static int intParam(Map<String, String> q, String name, int dflt, int min, int max) {
    String v = blankToNull(q.get(name));
    if (v == null) {
      return dflt;
    }
    long n = longParam(v, name);
    if (n < min || n > max) {
      throw new BadRequest(name + " must be in " + min + ".." + max + ", was " + n);
    }
    return (int) n;
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s;
  }

  private static String cut(String s) {
    if (s == null) {
      return null;
    }
    return s.length() <= ROW_TEXT_CHARS ? s : s.substring(0, ROW_TEXT_CHARS) + "\u2026";
  }

  static String str(Instant i) {
    return i == null ? null : i.toString();
  }

  private static ObjectNode error(String message) {
    ObjectNode o = JSON.createObjectNode();
    o.put("error", message);
    return o;
  }

  private static void sendJson(HttpExchange ex, int status, Object body) throws IOException {
    send(ex, status, "application/json", JSON.writeValueAsBytes(body));
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

  /** A malformed request parameter: answered with 400 and the message. */
  private static final class BadRequest extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    BadRequest(String message) {
      super(message);
    }
  }
}
