package dev.tether.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.tether.jdbc.Lease;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.TestDatabase;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import dev.tether.jdbc.WorkerInfo;
import dev.tether.jdbc.WorkerRegistry;
import dev.tether.test.SettableClock;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The dashboard's HTTP surface mounted under a context path on a plain JDK server, on every engine
 * (subclass per engine): the page, the bounded state with paging and filters, items, the fleet,
 * throughput and the token-guarded mutations.
 */
abstract class DashboardApiContract {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration LEASE = Duration.ofMinutes(5);

  private TestDatabase db;
  private TetherStore store;
  private SettableClock clock;
  private HttpServer server;
  private LeaseManager leases;
  private final HttpClient http = HttpClient.newHttpClient();
  private String base;

  protected abstract TestDatabase newDatabase();

  @BeforeEach
  void start() throws Exception {
    db = newDatabase();
    clock = new SettableClock(Instant.parse("2026-03-01T10:00:30Z"));
    store = TetherStore.open(db.url(), TetherStoreConfig.builder().clock(clock).maximumPoolSize(3).build());
    leases = new LeaseManager(store, "test");
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/tether/", TetherDashboard.builder(store).token("s3cret").countCap(5).pageSize(4)
        .listSize(3).clock(clock).build());
    server.start();
    base = "http://127.0.0.1:" + server.getAddress().getPort() + "/tether/";
  }

  @AfterEach
  void stop() {
    if (server != null) {
      server.stop(0);
    }
    if (store != null) {
      store.close();
    }
    if (db != null) {
      db.close();
    }
  }

  private HttpResponse<String> get(String path) throws Exception {
    return get(path, "s3cret");
  }

  private HttpResponse<String> get(String path, String token) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path));
    if (token != null) {
      b.header("X-Tether-Token", token);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private JsonNode json(String path) throws Exception {
    HttpResponse<String> r = get(path);
    assertThat(r.statusCode()).as("%s: %s", path, r.body()).isEqualTo(200);
    return JSON.readTree(r.body());
  }

  private HttpResponse<String> post(String path, String token) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).POST(HttpRequest.BodyPublishers.noBody());
    if (token != null) {
      b.header("X-Tether-Token", token);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private List<Long> enqueue(String queue, int n, String text) {
    List<NewWorkItem> items = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      items.add(NewWorkItem.of(queue, text + " " + i));
    }
    return leases.enqueueAll(items);
  }

  private long failedItem(String error) {
    long id = leases.enqueue(NewWorkItem.builder("f").input("fails").maxAttempts(1).build());
    Lease l = leases.acquire("f", LEASE).orElseThrow();
    leases.release(l.itemId(), l.token(), false, null, error);
    return id;
  }

  private static List<Long> ids(JsonNode rows) {
    List<Long> out = new ArrayList<>();
    rows.forEach(r -> out.add(r.get("id").asLong()));
    return out;
  }

  @Test
  void thePageIsSelfContainedWithAStrictPolicyAndRelativeUrls() throws Exception {
    HttpResponse<String> r = get("");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("text/html");
    assertThat(r.headers().firstValue("Content-Security-Policy").orElse("")).contains("default-src 'none'");
    // the SVG namespace is a name, not a resource; nothing else points anywhere
    String body = r.body().replace("\"http://www.w3.org/2000/svg\"", "");
    assertThat(body).contains("<title>Tether dashboard</title>").doesNotContain("innerHTML")
        .doesNotContain("http://").doesNotContain("https://").doesNotContain("fetch(\"/");
    assertThat(get("nope").statusCode()).isEqualTo(404);
  }

  @Test
  void stateCountsStopAtTheCapAndPagesWithKeysetAndFilters() throws Exception {
    List<Long> a = enqueue("a", 7, "echo alpha");
    List<Long> b = enqueue("b", 2, "echo beta");
    long failed = failedItem("exit status 1: <b>boom</b>");
    JsonNode s = json("api/state");
    assertThat(s.get("count_cap").asInt()).isEqualTo(5);
    // every queue counted: totals are the sums, capped where a queue's count is (a: 5+, b: 2)
    assertThat(s.get("totals").get("pending").get("n").asLong()).isEqualTo(7);
    assertThat(s.get("totals").get("pending").get("capped").asBoolean()).isTrue();
    assertThat(s.get("totals").get("failed").get("n").asLong()).isEqualTo(1);
    assertThat(s.get("totals").get("failed").get("capped").asBoolean()).isFalse();
    assertThat(s.get("queues")).extracting(q -> q.get("queue").asText()).containsExactly("a", "b", "f");
    assertThat(s.get("queues").get(0).get("counts").get("pending").get("capped").asBoolean()).isTrue();
    assertThat(s.get("queues").get(1).get("counts").get("pending").get("n").asLong()).isEqualTo(2);
    assertThat(s.get("failed_items").get(0).get("error").asText()).isEqualTo("failed on attempt 1 of 1: exit status 1: <b>boom</b>");
    // page 1 of everything: the newest 4 (page size), then older ones by keyset
    JsonNode items = s.get("items");
    assertThat(ids(items.get("rows"))).containsExactly(failed, b.get(1), b.get(0), a.get(6));
    List<Long> seen = new ArrayList<>(ids(items.get("rows")));
    while (!items.get("next_before").isNull()) {
      items = json("api/state?before=" + items.get("next_before").asLong()).get("items");
      seen.addAll(ids(items.get("rows")));
    }
    assertThat(seen).hasSize(10).doesNotHaveDuplicates().isSortedAccordingTo((x, y) -> Long.compare(y, x));
    // filters: queue, status, text, and all three
    assertThat(ids(json("api/state?queue=b").get("items").get("rows"))).containsExactly(b.get(1), b.get(0));
    assertThat(ids(json("api/state?status=failed").get("items").get("rows"))).containsExactly(failed);
    assertThat(ids(json("api/state?q=beta%201").get("items").get("rows"))).containsExactly(b.get(1));
    assertThat(ids(json("api/state?queue=a&status=pending&q=alpha&limit=2").get("items").get("rows")))
        .containsExactly(a.get(6), a.get(5));
    assertThat(json("api/state?queue=a&limit=2").get("items").get("filter").get("queue").asText()).isEqualTo("a");
    // malformed filters are 400s with a reason
    assertThat(get("api/state?status=nope").statusCode()).isEqualTo(400);
    assertThat(get("api/state?status=nope").body()).contains("unknown status 'nope'");
    assertThat(get("api/state?before=x").statusCode()).isEqualTo(400);
    assertThat(get("api/state?limit=5").statusCode()).as("over the page size").isEqualTo(400);
  }

  @Test
  void stateShowsInFlightScheduledRetryingAndTheFleet() throws Exception {
    long later = leases.enqueue(NewWorkItem.builder("s").input("later").delay(Duration.ofMinutes(10)).build());
    long running = leases.enqueue(NewWorkItem.of("r", "runs"));
    leases.acquire("r", LEASE).orElseThrow();
    WorkerRegistry registry = new WorkerRegistry(store);
    registry.register(new WorkerInfo.Registration("host-1:7", "host-1", 7, "9.9", List.of("r"), 2, 2), Duration.ofSeconds(10));
    registry.register(new WorkerInfo.Registration("host-2:8", "host-2", 8, "9.9", List.of("s"), 1, 1), Duration.ofSeconds(10));
    clock.advance(Duration.ofSeconds(31));
    registry.refresh("host-1:7", 1);
    JsonNode s = json("api/state");
    assertThat(ids(s.get("in_flight"))).containsExactly(running);
    assertThat(s.get("in_flight").get(0).get("lease_left_ms").asLong()).isEqualTo(LEASE.minusSeconds(31).toMillis());
    assertThat(s.get("in_flight").get(0).get("heartbeat_age_ms").asLong()).isEqualTo(31_000);
    assertThat(ids(s.get("scheduled"))).containsExactly(later);
    assertThat(s.get("scheduled").get(0).get("available_at").asText()).isEqualTo("2026-03-01T10:10:30Z");
    JsonNode workers = s.get("workers");
    assertThat(workers).extracting(w -> w.get("worker_id").asText() + "=" + w.get("state").asText())
        .containsExactly("host-1:7=alive", "host-2:8=gone");
    assertThat(workers.get(0).get("in_flight").asInt()).isEqualTo(1);
    assertThat(workers.get(0).get("queues").get(0).asText()).isEqualTo("r");
    assertThat(json("api/workers")).hasSize(2);
  }

  @Test
  void aPollStaysSmallWhateverTheCommandsHold() throws Exception {
    String huge = "echo " + "x".repeat(66_000);
    for (int i = 0; i < 30; i++) {
      leases.enqueue(NewWorkItem.of("big", huge));
    }
    for (int i = 0; i < 3; i++) {
      leases.acquire("big", LEASE).orElseThrow();
    }
    HttpResponse<String> r = get("api/state");
    assertThat(r.body().length()).isLessThan(20_000);
    JsonNode s = JSON.readTree(r.body());
    assertThat(s.get("items").get("rows").get(0).get("command").asText())
        .hasSize(TetherDashboard.ROW_TEXT_CHARS + 1).endsWith("\u2026");
    // the item itself is whole
    long id = s.get("items").get("rows").get(0).get("id").asLong();
    assertThat(json("api/item?id=" + id).get("command").asText()).isEqualTo(huge);
  }

  @Test
  void throughputCountsPerMinute() throws Exception {
    enqueue("t", 3, "t");
    for (int i = 0; i < 2; i++) {
      Lease l = leases.acquire("t", LEASE).orElseThrow();
      leases.complete(l.itemId(), l.token(), null);
    }
    failedItem("no");
    JsonNode t = json("api/throughput?minutes=5");
    assertThat(t.get("minutes")).hasSize(5);
    JsonNode last = t.get("minutes").get(4);
    assertThat(last.get("minute").asText()).isEqualTo("2026-03-01T10:00:00Z");
    assertThat(last.get("completed").asLong()).isEqualTo(2);
    assertThat(last.get("failed").asLong()).isEqualTo(1);
    assertThat(get("api/throughput?minutes=0").statusCode()).isEqualTo(400);
  }

  @Test
  void itemIsWholeWithHistoryOr404Or400() throws Exception {
    long id = failedItem("boom");
    JsonNode o = json("api/item?id=" + id);
    assertThat(o.get("status").asText()).isEqualTo("failed");
    assertThat(o.get("checkpoints").get(0).get("kind").asText()).isEqualTo("released_failed");
    assertThat(o.get("deliveries").get(0).get("outcome").asText()).isEqualTo("released_failed");
    assertThat(get("api/item?id=999").statusCode()).isEqualTo(404);
    assertThat(get("api/item?id=x").statusCode()).isEqualTo(400);
  }

  @Test
  void aDeliveryThatResumedFromProgressHasTheOutcomeItEndedWith() throws Exception {
    long id = enqueue("resume", 1, "job").get(0);
    Lease first = leases.acquire("resume", LEASE).orElseThrow();
    leases.checkpoint(id, first.token(), "step 2".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    leases.handBack(id, first.token(), Duration.ZERO);
    Lease second = leases.acquire("resume", LEASE).orElseThrow(); // takes over delivery 1's progress
    leases.complete(id, second.token(), null);
    JsonNode o = json("api/item?id=" + id);
    assertThat(o.get("checkpoints").get(1).get("kind").asText()).isEqualTo("progress_taken_over");
    assertThat(o.get("deliveries").get(0).get("outcome").asText()).isEqualTo("handed_back");
    assertThat(o.get("deliveries").get(1).get("outcome").asText()).isEqualTo("completed");
  }

  @Test
  void aDeliveryStillRunningHasNoReasonOfAnEarlierOnes() throws Exception {
    long id = leases.enqueue(NewWorkItem.builder("r").input("retried").maxAttempts(3).build());
    Lease first = leases.acquire("r", LEASE).orElseThrow();
    leases.release(id, first.token(), false, null, "the first try broke");
    clock.advance(Duration.ofMinutes(1)); // past the retry's backoff
    leases.acquire("r", LEASE).orElseThrow();
    JsonNode o = json("api/item?id=" + id);
    assertThat(o.get("deliveries").get(0).get("reason").asText()).contains("the first try broke");
    assertThat(o.get("deliveries").get(1).get("outcome").asText()).isEqualTo("in_progress");
    assertThat(o.get("deliveries").get(1).get("reason").isNull())
        .as("the running delivery's reason: %s", o.get("deliveries").get(1)).isTrue();
  }

  @Test
  void mutationsNeedPostAndTheToken() throws Exception {
    long id = failedItem("boom");
    assertThat(get("api/requeue?id=" + id).statusCode()).isEqualTo(405);
    assertThat(post("api/requeue?id=" + id, null).statusCode()).isEqualTo(401);
    assertThat(post("api/requeue?id=" + id, "wrong").statusCode()).isEqualTo(403);
    assertThat(post("api/requeue?id=" + id, "s3cret-and-more").statusCode()).isEqualTo(403);
    assertThat(leases.find(id).orElseThrow().status().dbValue()).isEqualTo("failed");
    assertThat(post("api/requeue?id=" + id, "s3cret").statusCode()).isEqualTo(200);
    assertThat(leases.find(id).orElseThrow().status().dbValue()).isEqualTo("pending");
    assertThat(post("api/requeue?id=" + id, "s3cret").statusCode()).isEqualTo(409);
    assertThat(post("api/cancel?id=" + id, "s3cret").statusCode()).isEqualTo(200);
    assertThat(leases.find(id).orElseThrow().status().dbValue()).isEqualTo("cancelled");
  }

  @Test
  void withoutATokenMutationsAreRefused() throws Exception {
    long id = failedItem("boom");
    server.createContext("/open/", TetherDashboard.builder(store).build());
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(
        "http://127.0.0.1:" + server.getAddress().getPort() + "/open/api/requeue?id=" + id))
        .header("X-Tether-Token", "anything").POST(HttpRequest.BodyPublishers.noBody()).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(403);
    assertThat(r.body()).contains("no token configured");
    assertThat(leases.find(id).orElseThrow().status().dbValue()).isEqualTo("failed");
  }

  @Test
  void withATokenEveryReadNeedsItAndThePageMayNotBeFramed() throws Exception {
    long id = enqueue("secrets", 1, "curl -H 'Authorization: hunter2'").get(0);
    for (String path : List.of("api/state", "api/item?id=" + id, "api/workers", "api/throughput")) {
      assertThat(get(path, null).statusCode()).as(path).isEqualTo(401);
      assertThat(get(path, null).body()).as(path).doesNotContain("hunter2");
      assertThat(get(path, "wrong").statusCode()).as(path).isEqualTo(403);
      assertThat(get(path, "s3cret").statusCode()).as(path).isEqualTo(200);
    }
    HttpResponse<String> bearer = http.send(HttpRequest.newBuilder(URI.create(base + "api/item?id=" + id))
        .header("Authorization", "Bearer s3cret").build(), HttpResponse.BodyHandlers.ofString());
    assertThat(bearer.statusCode()).isEqualTo(200);
    assertThat(bearer.body()).contains("hunter2");
    HttpResponse<String> page = get("", null); // the page itself holds no data
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.headers().firstValue("X-Frame-Options")).contains("DENY");
    assertThat(page.headers().firstValue("Content-Security-Policy")).hasValueSatisfying(
        csp -> assertThat(csp).contains("frame-ancestors 'none'"));
  }
}
