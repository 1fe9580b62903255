package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.tether.SettableTicker;
import dev.tether.health.HealthServer;
import dev.tether.jdbc.PostgresTestSchema;
import dev.tether.jdbc.TcpProxy;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Readiness of {@code tether serve}: answered from background probes of the database. */
class ProbedReadinessTest {
  private final SettableTicker ticker = new SettableTicker();
  private final ExecutorService executor = Executors.newSingleThreadExecutor();
  private final AtomicBoolean answer = new AtomicBoolean(true);
  private final AtomicInteger probes = new AtomicInteger();
  private volatile CountDownLatch hold = new CountDownLatch(0);
  private final ProbedReadiness ready = new ProbedReadiness(() -> {
    try {
      hold.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
    boolean result = answer.get();
    probes.incrementAndGet();
    return result;
  }, Duration.ofSeconds(1), Duration.ofSeconds(2), ticker, executor);

  @AfterEach
  void close() {
    ready.close();
  }

  @Test
  void readyAtFirstThenEachAnswerIsTheLatestProbesAndProbesStartAtMostOncePerInterval() {
    answer.set(false);
    assertThat(ready.getAsBoolean()).as("the store was just opened").isTrue();
    await().until(() -> probes.get() == 1);
    assertThat(ready.getAsBoolean()).isFalse();
    answer.set(true);
    for (int i = 0; i < 50; i++) {
      ready.getAsBoolean();
    }
    ticker.advance(Duration.ofMillis(999));
    assertThat(ready.getAsBoolean()).as("within the interval: no new probe").isFalse();
    assertThat(probes.get()).isEqualTo(1);

    ticker.advance(Duration.ofMillis(1));
    assertThat(ready.getAsBoolean()).as("the probe it starts has not answered yet").isFalse();
    await().until(() -> probes.get() == 2);
    assertThat(ready.getAsBoolean()).isTrue();
  }

  @Test
  void aProbeStillRunningAfterTheTimeoutReportsUnreadyUntilItAnswers() {
    hold = new CountDownLatch(1);
    assertThat(ready.getAsBoolean()).isTrue(); // starts a probe that hangs
    ticker.advance(Duration.ofMillis(1999));
    assertThat(ready.getAsBoolean()).isTrue();
    ticker.advance(Duration.ofMillis(1));
    assertThat(ready.getAsBoolean()).as("a database that does not answer in 2 s").isFalse();
    ticker.advance(Duration.ofSeconds(10));
    assertThat(ready.getAsBoolean()).isFalse();
    assertThat(probes.get()).as("never two probes at once").isZero();

    hold.countDown();
    await().until(() -> probes.get() == 1);
    assertThat(ready.getAsBoolean()).isTrue();
  }

  @Test
  void aProbeThatThrowsCountsAsFailedAndAClosedCheckIsUnready() {
    ProbedReadiness throwing = new ProbedReadiness(() -> {
      probes.incrementAndGet();
      throw new IllegalStateException("the Tether store is closed");
    }, Duration.ofSeconds(1), Duration.ofSeconds(2), ticker, Executors.newSingleThreadExecutor());
    try {
      throwing.getAsBoolean();
      await().until(() -> probes.get() == 1);
      await().until(() -> !throwing.getAsBoolean());
    } finally {
      throwing.close();
    }
    assertThat(ready.getAsBoolean()).isTrue();
    ready.close();
    assertThat(ready.getAsBoolean()).isFalse();
    ticker.advance(Duration.ofSeconds(5));
    assertThat(ready.getAsBoolean()).isFalse();
  }

  @Test
  void rejectsIntervalsThatAreNotPositive() {
    assertThatThrownBy(() -> new ProbedReadiness(() -> true, Duration.ZERO, Duration.ofSeconds(1), ticker, executor))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("interval");
    assertThatThrownBy(() -> new ProbedReadiness(() -> true, Duration.ofSeconds(1), Duration.ofMillis(-1), ticker, executor))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("timeout");
  }

  @Test
  void onPostgresTheDashboardsReadinessFollowsTheDatabaseGoingAwayAndComingBack() throws Exception {
    // What `tether serve` runs: a dashboard and no workers, so no other call would notice.
    try (PostgresTestSchema schema = new PostgresTestSchema("tether_cli_");
        TcpProxy proxy = new TcpProxy(schema.url());
        TetherStore store = TetherStore.open(proxy.url(schema.url()),
            TetherStoreConfig.builder().notifications(false).connectionTimeout(Duration.ofSeconds(1)).build());
        ProbedReadiness probed = ProbedReadiness.of(store)) {
      HealthServer server = new Dashboard(store, "t", null, null).start("127.0.0.1", 0, probed);
      try {
        HttpClient http = HttpClient.newHttpClient();
        URI uri = URI.create("http://127.0.0.1:" + server.address().getPort() + "/health/ready");
        HttpRequest get = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5)).build();
        assertThat(http.send(get, HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);

        proxy.cut();
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200))
            .until(() -> http.send(get, HttpResponse.BodyHandlers.ofString()).statusCode() == 503);
        assertThat(store.isAvailable()).isFalse();

        proxy.restore();
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200))
            .until(() -> http.send(get, HttpResponse.BodyHandlers.ofString()).statusCode() == 200);
        assertThat(store.isAvailable()).isTrue();
      } finally {
        server.stop();
      }
    }
  }
}
