package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tether.health.HealthServer;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.TetherStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The dashboard's HTTP surface: page, JSON API, token checks on mutations, /metrics. */
class DashboardTest {
  @TempDir Path dir;
  private TetherStore store;
  private HealthServer server;
  private LeaseManager leases;
  private final HttpClient http = HttpClient.newHttpClient();
  private String base;

  @BeforeEach
  void start() {
    store = TetherStore.open(dir.resolve("d.db").toString());
    leases = new LeaseManager(store, "test");
    server = new Dashboard(store, "s3cret", null, new WorkerMetrics()).start("127.0.0.1", 0, () -> true);
    base = "http://127.0.0.1:" + server.address().getPort();
  }

  @AfterEach
  void stop() {
    server.stop();
    store.close();
  }

  private long enqueue(String script, int maxAttempts) {
    return enqueue("q", script, maxAttempts);
  }

  private long enqueue(String queue, String script, int maxAttempts) {
    return leases.enqueue(
        NewWorkItem.builder(queue)
            .input(new CommandSpec(List.of(script), true, "output", Map.of()).toJson())
            .maxAttempts(maxAttempts)
            .build());
  }

  private long failedItem() {
    long id = enqueue("f", "exit 1", 1);
    var lease = leases.acquire("f", Duration.ofSeconds(30)).orElseThrow();
    leases.release(lease.itemId(), lease.token(), false, null, "exit status 1: <b>boom</b>");
    return id;
  }

  private HttpResponse<String> get(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create(base + path)).header("X-Tether-Token", "s3cret").build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> post(String path, String token) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).POST(HttpRequest.BodyPublishers.noBody());
    if (token != null) {
      b.header("X-Tether-Token", token);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void pageIsSelfContainedHtmlWithAStrictContentSecurityPolicy() throws Exception {
    HttpResponse<String> r = get("/");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("text/html");
    assertThat(r.headers().firstValue("Content-Security-Policy").orElse("")).contains("default-src 'none'");
    // the SVG namespace is a name, not a resource; nothing else points anywhere
    assertThat(r.body().replace("\"http://www.w3.org/2000/svg\"", "")).contains("<title>Tether dashboard</title>")
        .doesNotContain("innerHTML").doesNotContain("http://").doesNotContain("https://");
  }

  @Test
  void stateHasCountsFailedItemsAndTheCommandLinesAsPlainData() throws Exception {
    enqueue("echo '<script>alert(1)</script>'", 3);
    failedItem();
    JsonNode s = Json.MAPPER.readTree(get("/api/state").body());
    assertThat(s.get("totals").get("pending").get("n").asLong()).isEqualTo(1);
    assertThat(s.get("totals").get("failed").get("n").asLong()).isEqualTo(1);
    assertThat(s.get("queues").get(0).get("queue").asText()).isEqualTo("f");
    assertThat(s.get("queues").get(0).get("counts").get("failed").get("n").asLong()).isEqualTo(1);
    assertThat(s.get("failed_items").get(0).get("error").asText()).isEqualTo("failed on attempt 1 of 1: exit status 1: <b>boom</b>");
    // the CLI's command display (sh -c ...), not the stored JSON
    assertThat(s.get("items").get("rows").get(1).get("command").asText()).startsWith("sh -c ")
        .contains("<script>alert(1)</script>").doesNotContain("argv");
    assertThat(s.has("local")).as("no worker in this process").isFalse();
  }

  @Test
  void itemEndpointReturnsTheHistoryOr404() throws Exception {
    long id = failedItem();
    JsonNode o = Json.MAPPER.readTree(get("/api/item?id=" + id).body());
    assertThat(o.get("status").asText()).isEqualTo("failed");
    assertThat(o.get("checkpoints").get(0).get("kind").asText()).isEqualTo("released_failed");
    assertThat(get("/api/item?id=999").statusCode()).isEqualTo(404);
    assertThat(get("/api/item?id=x").statusCode()).isEqualTo(400);
  }

  @Test
  void requeueWithoutTokenIs401WithAWrongTokenIs403AndWithTheTokenWorks() throws Exception {
    long id = failedItem();
    assertThat(post("/api/requeue?id=" + id, null).statusCode()).isEqualTo(401);
    assertThat(post("/api/requeue?id=" + id, "wrong").statusCode()).isEqualTo(403);
    assertThat(post("/api/requeue?id=" + id, "s3cret-and-more").statusCode()).isEqualTo(403);
    assertThat(leases.find(id).orElseThrow().status().dbValue()).isEqualTo("failed");
    HttpResponse<String> ok = post("/api/requeue?id=" + id, "s3cret");
    assertThat(ok.statusCode()).isEqualTo(200);
    assertThat(leases.find(id).orElseThrow().status().dbValue()).isEqualTo("pending");
    assertThat(post("/api/requeue?id=" + id, "s3cret").statusCode()).isEqualTo(409);
  }

  @Test
  void mutationsNeedPost() throws Exception {
    assertThat(get("/api/requeue?id=1").statusCode()).isEqualTo(405);
  }

  @Test
  void cancelEndsAPendingItemCancelledWithACheckpoint() throws Exception {
    long id = enqueue("sleep 100", 3);
    assertThat(post("/api/cancel?id=" + id, "s3cret").statusCode()).isEqualTo(200);
    var w = leases.find(id).orElseThrow();
    assertThat(w.status().dbValue()).isEqualTo("cancelled");
    assertThat(w.checkpoints()).extracting(c -> c.kind()).containsExactly("cancelled");
    assertThat(post("/api/cancel?id=" + id, "s3cret").statusCode()).isEqualTo(409);
  }

  @Test
  void metricsArePrometheusText() throws Exception {
    enqueue("true", 3);
    failedItem();
    get("/metrics"); // the first scrape reads the store and finds the queues
    HttpResponse<String> r = get("/metrics");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("text/plain; version=0.0.4");
    // a dashboard without a worker (tether serve) exports the store-wide gauges
    assertThat(r.body())
        .contains("# TYPE tether_queue_items gauge")
        .containsPattern("tether_queue_items\\{queue=\"q\",status=\"pending\"} 1(\\.0)?\n")
        .containsPattern("tether_queue_items\\{queue=\"f\",status=\"failed\"} 1(\\.0)?\n")
        .contains("# TYPE tether_commands_succeeded_total counter")
        .containsPattern("tether_commands_succeeded_total 0(\\.0)?\n")
        // store figures that drop after a purge are gauges, never *_total counters
        .doesNotContain("tether_checkpoints_total{kind=");
    for (String line : r.body().split("\n")) {
      assertThat(line).matches("# (HELP|TYPE) .*|[a-z_]+(\\{[^}]*\\})? (-?[0-9.E+-]+|NaN)");
    }
  }

  @Test
  void headOnMetricsGivesTheHeadersOnlyAndLogsNothing() throws Exception {
    java.util.logging.Logger jdk = java.util.logging.Logger.getLogger("com.sun.net.httpserver");
    java.util.List<java.util.logging.LogRecord> records = new java.util.concurrent.CopyOnWriteArrayList<>();
    java.util.logging.Handler capture = new java.util.logging.Handler() {
      @Override
      public void publish(java.util.logging.LogRecord record) {
        if (record.getLevel().intValue() >= java.util.logging.Level.INFO.intValue()) {
          records.add(record);
        }
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    jdk.addHandler(capture);
    try {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + "/metrics"))
          .method("HEAD", HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.body()).isEmpty();
      assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("text/plain; version=0.0.4");
      assertThat(get("/metrics").statusCode()).isEqualTo(200); // the same exchange path, then nothing logged
      assertThat(records).extracting(java.util.logging.LogRecord::getMessage).isEmpty();
    } finally {
      jdk.removeHandler(capture);
    }
  }

  @Test
  void healthProbesStillAnswer() throws Exception {
    assertThat(get("/health/live").statusCode()).isEqualTo(200);
    assertThat(get("/health/ready").statusCode()).isEqualTo(200);
    assertThat(get("/nope").statusCode()).isEqualTo(404);
  }

  @Test
  void theLinkWithATokenEncodesItSoThatThePageReadsItWhole() {
    assertThat(Dashboard.linkWithToken("http://127.0.0.1:8080/", "a b&c%d"))
        .isEqualTo("http://127.0.0.1:8080/#token=a%20b%26c%25d");
    assertThat(Dashboard.tokenLine("http://h/", "t0k"))
        .startsWith("dashboard token: t0k ").contains("open http://h/#token=t0k;");
  }
}
