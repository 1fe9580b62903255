package dev.tether.health;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class HealthServerTest {
  private static final HttpClient client =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private final List<HealthServer> servers = new ArrayList<>();
  private final List<Socket> sockets = new ArrayList<>();

  @AfterEach
  void tearDown() {
    for (Socket s : sockets) {
      try {
        s.close();
      } catch (IOException ignored) {
        // best effort
      }
    }
    servers.forEach(HealthServer::stop);
  }

  private HealthServer start(HealthServer.Builder builder) {
    HealthServer server = builder.host("127.0.0.1").port(0).build();
    servers.add(server);
    server.start();
    return server;
  }

  private static URI uri(HealthServer server, String path) {
    return URI.create("http://127.0.0.1:" + server.address().getPort() + path);
  }

  private static HttpResponse<String> send(HealthServer server, String method, String path)
      throws Exception {
    HttpRequest request =
        HttpRequest.newBuilder(uri(server, path))
            .timeout(Duration.ofSeconds(5))
            .method(method, HttpRequest.BodyPublishers.noBody())
            .build();
    return client.send(request, HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void livenessIsHealthyJsonThatIsNeverCached() throws Exception {
    HealthServer server = start(HealthServer.builder());

    HttpResponse<String> r = send(server, "GET", "/health/live");

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).isEqualTo("{\"status\":\"healthy\"}");
    assertThat(r.headers().firstValue("Content-Type")).hasValue("application/json");
    assertThat(r.headers().firstValue("Cache-Control")).hasValue("no-store");
  }

  @Test
  void readinessFollowsTheCheckFrom200To503AndBack() throws Exception {
    AtomicBoolean ready = new AtomicBoolean(true);
    HealthServer server = start(HealthServer.builder().readinessCheck(ready::get));

    HttpResponse<String> up = send(server, "GET", "/health/ready");
    assertThat(up.statusCode()).isEqualTo(200);
    assertThat(up.body()).isEqualTo("{\"status\":\"healthy\"}");

    ready.set(false);
    HttpResponse<String> down = send(server, "GET", "/health/ready");
    assertThat(down.statusCode()).isEqualTo(503);
    assertThat(down.body()).isEqualTo("{\"status\":\"unhealthy\"}");
    assertThat(down.headers().firstValue("Content-Type")).hasValue("application/json");
    assertThat(send(server, "GET", "/health/live").statusCode())
        .as("liveness does not depend on readiness")
        .isEqualTo(200);

    ready.set(true);
    assertThat(send(server, "GET", "/health/ready").statusCode()).isEqualTo(200);
  }

  @Test
  void readinessCheckThatThrowsIsNotReady() throws Exception {
    HealthServer server =
        start(
            HealthServer.builder()
                .readinessCheck(
                    () -> {
                      throw new IllegalStateException("store unreachable");
                    }));

    HttpResponse<String> r = send(server, "GET", "/health/ready");

    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(r.body()).isEqualTo("{\"status\":\"unhealthy\"}");
    assertThat(send(server, "GET", "/health/live").statusCode()).isEqualTo(200);
  }

  @Test
  void unknownPathsAre404IncludingLookalikesOfTheHealthPaths() throws Exception {
    HealthServer server = start(HealthServer.builder());

    for (String path : List.of("/", "/nope", "/health", "/health/live/x", "/health/livex")) {
      HttpResponse<String> r = send(server, "GET", path);
      assertThat(r.statusCode()).as(path).isEqualTo(404);
      assertThat(r.headers().firstValue("Content-Type")).as(path).hasValue("application/json");
    }
  }

  @Test
  void otherMethodsAre405WithAllowHeader() throws Exception {
    HealthServer server = start(HealthServer.builder());

    for (String method : List.of("POST", "PUT", "DELETE", "OPTIONS")) {
      for (String path : List.of("/health/live", "/health/ready")) {
        HttpResponse<String> r = send(server, method, path);
        assertThat(r.statusCode()).as(method + " " + path).isEqualTo(405);
        assertThat(r.headers().firstValue("Allow")).as(method + " " + path).hasValue("GET, HEAD");
      }
    }
  }

  @Test
  void headAnswersTheStatusAndHeadersWithoutABody() throws Exception {
    AtomicBoolean ready = new AtomicBoolean(false);
    HealthServer server = start(HealthServer.builder().readinessCheck(ready::get));

    HttpResponse<String> live = send(server, "HEAD", "/health/live");
    assertThat(live.statusCode()).isEqualTo(200);
    assertThat(live.body()).isEmpty();
    assertThat(live.headers().firstValue("Content-Type")).hasValue("application/json");
    assertThat(live.headers().firstValue("Content-Length")).hasValue("20");
    assertThat(send(server, "HEAD", "/health/ready").statusCode()).isEqualTo(503);
  }

  @Test
  void portZeroPicksAFreePortReportedByAddress() throws Exception {
    HealthServer server = start(HealthServer.builder());

    InetSocketAddress address = server.address();

    assertThat(address.getPort()).isPositive();
    assertThat(address.getAddress()).isEqualTo(InetAddress.getByName("127.0.0.1"));
    assertThat(send(server, "GET", "/health/live").statusCode()).isEqualTo(200);
  }

  @Test
  void stopFreesThePortIsIdempotentAndCannotBeUndone() throws Exception {
    HealthServer server = start(HealthServer.builder());
    int port = server.address().getPort();
    assertThat(send(server, "GET", "/health/live").statusCode()).isEqualTo(200);

    server.stop();
    server.stop();

    assertThat(server.isRunning()).isFalse();
    assertThatThrownBy(server::address).isInstanceOf(IllegalStateException.class);
    try (ServerSocket rebind = new ServerSocket()) {
      rebind.bind(new InetSocketAddress("127.0.0.1", port));
      assertThat(rebind.getLocalPort()).isEqualTo(port);
    }
    assertThatThrownBy(server::start)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("cannot be restarted");
  }

  @Test
  void serverThreadsAreDaemonsSoAForgottenServerDoesNotKeepTheJvmAlive() throws Exception {
    HealthServer server = start(HealthServer.builder());
    assertThat(send(server, "GET", "/health/live").statusCode()).isEqualTo(200);

    List<Thread> serverThreads =
        Thread.getAllStackTraces().keySet().stream()
            .filter(t -> t.getName().equals("HTTP-Dispatcher") || t.getName().startsWith("tether-health-"))
            .toList();

    assertThat(serverThreads).extracting(Thread::getName).contains("HTTP-Dispatcher", "tether-health-1");
    assertThat(serverThreads).allMatch(Thread::isDaemon);
  }

  @Test
  void portInUseIsAClearError() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
      HealthServer server =
          HealthServer.builder().host("127.0.0.1").port(taken.getLocalPort()).build();
      servers.add(server);
      assertThatThrownBy(server::start)
          .isInstanceOf(UncheckedIOException.class)
          .hasMessageContaining("127.0.0.1:" + taken.getLocalPort())
          .hasMessageContaining("healthPort");
      assertThat(server.isRunning()).isFalse();
    }
  }

  @Test
  void extraRoutesAreServedAndHealthPathsAreReserved() throws Exception {
    HealthServer server =
        start(
            HealthServer.builder()
                .route(
                    "/metrics",
                    exchange -> {
                      byte[] body = "tether_up 1\n".getBytes(StandardCharsets.UTF_8);
                      exchange.sendResponseHeaders(200, body.length);
                      try (OutputStream out = exchange.getResponseBody()) {
                        out.write(body);
                      }
                    }));

    HttpResponse<String> r = send(server, "GET", "/metrics");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).isEqualTo("tether_up 1\n");
    assertThat(send(server, "GET", "/other").statusCode()).isEqualTo(404);

    assertThatThrownBy(() -> HealthServer.builder().route("/health/live", e -> {}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("reserved");
    assertThatThrownBy(() -> HealthServer.builder().route("metrics", e -> {}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must start with '/'");
  }

  @Test
  void failingRouteGets500AndTheServerKeepsServing() throws Exception {
    HealthServer server =
        start(
            HealthServer.builder()
                .route(
                    "/boom",
                    exchange -> {
                      throw new IllegalStateException("dashboard bug");
                    }));

    assertThat(send(server, "GET", "/boom").statusCode()).isEqualTo(500);
    assertThat(send(server, "GET", "/health/live").statusCode()).isEqualTo(200);
  }

  @Test
  void invalidConfigurationIsRejectedWithTheValue() {
    assertThatThrownBy(() -> HealthServer.builder().port(70000))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("port must be 0..65535, was 70000");
    assertThatThrownBy(() -> HealthServer.builder().requestReadTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("requestReadTimeout");
    assertThatThrownBy(() -> HealthServer.builder().maxConcurrentRequests(1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("was 1");
  }

  // ---- raw-socket tests: malformed and slow clients ----

  private Socket connect(HealthServer server) throws IOException {
    Socket s = new Socket();
    sockets.add(s);
    s.connect(new InetSocketAddress("127.0.0.1", server.address().getPort()), 5000);
    s.setSoTimeout(10_000);
    return s;
  }

  private static String readAll(Socket s) throws IOException {
    InputStream in = s.getInputStream();
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    byte[] chunk = new byte[1024];
    try {
      int n;
      while ((n = in.read(chunk)) != -1) {
        buf.write(chunk, 0, n);
      }
    } catch (IOException e) {
      // a reset after the response is as good as a close here
    }
    return buf.toString(StandardCharsets.ISO_8859_1);
  }

  /** A probe over a fresh raw connection; returns the status line. */
  private String rawProbe(HealthServer server, String path) throws IOException {
    try (Socket s = connect(server)) {
      s.getOutputStream()
          .write(
              ("GET " + path + " HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n")
                  .getBytes(StandardCharsets.ISO_8859_1));
      String response = readAll(s);
      int eol = response.indexOf("\r\n");
      return eol < 0 ? response : response.substring(0, eol);
    }
  }

  @Test
  void malformedRequestLineGets400AndDoesNotAffectTheNextProbe() throws Exception {
    HealthServer server = start(HealthServer.builder());

    for (String garbage :
        List.of(
            "GARBAGE\r\n\r\n",
            "GET\r\n\r\n",
            "GET /health/live\r\n\r\n",
            "GET /%zz HTTP/1.1\r\n\r\n",
            "G E T /x HTTP/1.1\r\n\r\n",
            "GET /health/live HTTP/1.1\r\nBad Header\u0001: x\r\n\r\n")) {
      try (Socket s = connect(server)) {
        s.getOutputStream().write(garbage.getBytes(StandardCharsets.ISO_8859_1));
        String response = readAll(s);
        assertThat(response)
            .as("an error status or a closed connection for %s", garbage)
            .satisfiesAnyOf(
                r -> assertThat(r).startsWith("HTTP/1.1 4"), r -> assertThat(r).isEmpty());
        assertThat(response).as(garbage).doesNotStartWith("HTTP/1.1 200");
      }
      assertThat(rawProbe(server, "/health/live")).as("after " + garbage).contains("200");
    }
    try (Socket s = connect(server)) {
      s.getOutputStream().write(new byte[] {0, 1, 2, (byte) 0xff, '\r', '\n', '\r', '\n'});
      readAll(s);
    }
    assertThat(send(server, "GET", "/health/live").statusCode()).isEqualTo(200);
  }

  @Test
  void fiftyStalledClientsDoNotDelayLiveness() throws Exception {
    HealthServer server = start(HealthServer.builder());
    // warm up the server and the client path
    for (int i = 0; i < 20; i++) {
      assertThat(rawProbe(server, "/health/live")).contains("200");
    }
    long baseline = timeProbeNanos(server);

    for (int i = 0; i < 50; i++) {
      Socket s = connect(server);
      s.getOutputStream().write("GET /health/li".getBytes(StandardCharsets.ISO_8859_1));
      s.getOutputStream().flush();
    }
    Thread.sleep(200); // let the dispatcher hand all 50 to reading threads

    long worst = 0;
    for (int i = 0; i < 10; i++) {
      worst = Math.max(worst, timeProbeNanos(server));
    }
    System.out.printf(
        "liveness probe: baseline %.2f ms, worst of 10 with 50 stalled clients %.2f ms%n",
        baseline / 1e6, worst / 1e6);
    assertThat(TimeUnit.NANOSECONDS.toMillis(worst)).isLessThan(1000);
  }

  private long timeProbeNanos(HealthServer server) throws IOException {
    long t0 = System.nanoTime();
    assertThat(rawProbe(server, "/health/live")).contains("200");
    return System.nanoTime() - t0;
  }

  @Test
  void clientThatStallsMidRequestIsCutOffAfterTheReadTimeout() throws Exception {
    HealthServer server =
        start(HealthServer.builder().requestReadTimeout(Duration.ofMillis(300)));
    Socket slow = connect(server);
    slow.getOutputStream().write("GET /health/ready HTT".getBytes(StandardCharsets.ISO_8859_1));
    long t0 = System.nanoTime();

    String response = readAll(slow); // returns when the server closes the connection

    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    assertThat(response).isEmpty();
    assertThat(tookMs).isBetween(250L, 3000L);
    assertThat(server.defenceCounters()[0]).isEqualTo(1);
    assertThat(rawProbe(server, "/health/live")).contains("200");
  }

  @Test
  void whenEveryThreadReadsASlowRequestAProbeCutsOffTheOldestAndIsServed() throws Exception {
    HealthServer server =
        start(
            HealthServer.builder()
                .maxConcurrentRequests(4)
                .requestReadTimeout(Duration.ofSeconds(30)));
    List<Socket> slow = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      Socket s = connect(server);
      s.getOutputStream().write("GET /".getBytes(StandardCharsets.ISO_8859_1));
      slow.add(s);
      int started = i + 1;
      await().atMost(Duration.ofSeconds(5)).until(() -> server.defenceCounters()[2] == started);
    }
    // every thread is reading a stalled request: the probe evicts the oldest, not itself
    assertThat(rawProbe(server, "/health/live")).contains("200");
    assertThat(server.defenceCounters()[3]).isEqualTo(1);
    assertThat(server.defenceCounters()[1]).isZero();
    assertThat(readAll(slow.get(0))).as("the oldest slow client was cut off").isEmpty();
  }

  @Test
  void connectionsBeyondTheLimitAreRefusedOnlyWhenEveryThreadRunsAHandler() throws Exception {
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    HealthServer server =
        start(
            HealthServer.builder()
                .maxConcurrentRequests(2)
                .route("/block", exchange -> {
                  try {
                    release.await();
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                  exchange.sendResponseHeaders(204, -1);
                  exchange.close();
                }));
    for (int i = 0; i < 2; i++) {
      connect(server).getOutputStream()
          .write("GET /block HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
    }
    await().atMost(Duration.ofSeconds(5)).until(() -> server.defenceCounters()[2] == 2);
    assertThat(rawProbe(server, "/health/live")).as("no thread to take: closed").isEmpty();
    assertThat(server.defenceCounters()[1]).isPositive();
    release.countDown();
    await()
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(() -> assertThat(rawProbe(server, "/health/live")).contains("200"));
  }
}
