package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.tether.health.HealthServer;
import dev.tether.jdbc.PostgresTestSchema;
import dev.tether.jdbc.TcpProxy;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import dev.tether.test.SettableTicker;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/** Readiness of {@code tether serve}: answered from background probes of the database. */
class ProbedReadinessTest {
  private final SettableTicker ticker = new SettableTicker();
  private final ManualExecutor executor = new ManualExecutor();
  private final AtomicBoolean answer = new AtomicBoolean(true);
  private final AtomicInteger probes = new AtomicInteger();

  private ProbedReadiness readiness(BooleanSupplier probe) {
    return new ProbedReadiness(probe, Duration.ofSeconds(1), Duration.ofSeconds(2), ticker, executor);
  }

  private final ProbedReadiness ready = readiness(() -> {
    probes.incrementAndGet();
    return answer.get();
  });

  /** Queues tasks until the test runs them: probes start and finish where the test says. */
  private static final class ManualExecutor extends AbstractExecutorService {
    private final ArrayDeque<Runnable> queued = new ArrayDeque<>();
    private boolean shutdown;

    @Override
    public synchronized void execute(Runnable task) {
      if (shutdown) {
        throw new RejectedExecutionException("shut down");
      }
      queued.add(task);
    }

    synchronized int queued() {
      return queued.size();
    }

    /** Runs the first queued task. */
    void runOne() {
      Runnable task;
      synchronized (this) {
        task = queued.remove();
      }
      task.run();
    }

    @Override
    public synchronized void shutdown() {
      shutdown = true;
    }

    @Override
    public synchronized List<Runnable> shutdownNow() {
      shutdown = true;
      List<Runnable> left = List.copyOf(queued);
      queued.clear();
      return left;
    }

    @Override
    public synchronized boolean isShutdown() {
      return shutdown;
    }

    @Override
    public synchronized boolean isTerminated() {
      return shutdown;
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) {
      return true;
    }
  }

  @Test
  void readyAtFirstThenEachAnswerIsTheLatestProbesAndProbesStartAtMostOncePerInterval() {
    answer.set(false);
    assertThat(ready.getAsBoolean()).as("the store was just opened").isTrue();
    assertThat(executor.queued()).isEqualTo(1);
    for (int i = 0; i < 50; i++) {
      assertThat(ready.getAsBoolean()).as("the probe has not answered yet").isTrue();
    }
    executor.runOne();
    assertThat(ready.getAsBoolean()).isFalse();
    answer.set(true);
    ticker.advance(Duration.ofMillis(999));
    for (int i = 0; i < 50; i++) {
      assertThat(ready.getAsBoolean()).as("within the interval: the last probe's answer").isFalse();
    }
    assertThat(executor.queued()).as("no probe within the interval").isZero();

    ticker.advance(Duration.ofMillis(1));
    assertThat(ready.getAsBoolean()).as("the probe it starts has not answered yet").isFalse();
    assertThat(executor.queued()).isEqualTo(1);
    executor.runOne();
    assertThat(ready.getAsBoolean()).isTrue();
    assertThat(probes.get()).isEqualTo(2);
  }

  @Test
  void aProbeRunningForTheTimeoutReportsUnreadyAndNoSecondOneStartsUntilItAnswers() {
    assertThat(ready.getAsBoolean()).isTrue(); // starts a probe, which the test leaves queued (hung)
    ticker.advance(Duration.ofMillis(1999));
    assertThat(ready.getAsBoolean()).isTrue();
    ticker.advance(Duration.ofMillis(1));
    assertThat(ready.getAsBoolean()).as("a database that does not answer in 2 s").isFalse();
    ticker.advance(Duration.ofSeconds(10));
    assertThat(ready.getAsBoolean()).isFalse();
    assertThat(executor.queued()).as("never two probes at once").isEqualTo(1);

    executor.runOne();
    assertThat(ready.getAsBoolean()).isTrue();
    assertThat(executor.queued()).as("the next probe is due at once: the last started 12 s ago").isEqualTo(1);
  }

  @Test
  void aProbeThatThrowsCountsAsFailedAndTheNextOneStillRuns() {
    AtomicBoolean fail = new AtomicBoolean(true);
    ProbedReadiness throwing = readiness(() -> {
      if (fail.get()) {
        throw new IllegalStateException("the Tether store is closed");
      }
      return true;
    });
    throwing.getAsBoolean();
    executor.runOne();
    assertThat(throwing.getAsBoolean()).isFalse();
    fail.set(false);
    ticker.advance(Duration.ofSeconds(1));
    throwing.getAsBoolean();
    executor.runOne();
    assertThat(throwing.getAsBoolean()).isTrue();
  }

  @Test
  void closedItIsUnreadyForGood() {
    assertThat(ready.getAsBoolean()).isTrue(); // a probe queued
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
        await().atMost(Duration.ofSeconds(20)).until(() -> !store.isAvailable());

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
