package dev.tether.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tether.Codec;
import dev.tether.LeaseExtenderConfig;
import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.TetherStore;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.mailbox.DeadLetterPolicy;
import dev.tether.test.SettableTicker;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TetherMetricsTest {
  @TempDir Path dir;
  private TetherStore store;
  private final MeterRegistry registry = new SimpleMeterRegistry();

  @BeforeEach
  void open() {
    store = TetherStore.open(dir.resolve("t.db").toString());
  }

  @AfterEach
  void close() {
    store.close();
  }

  private static MainLoopConfig config(int maxAttempts) {
    return MainLoopConfig.builder()
        .waitTime(Duration.ZERO)
        .maxMessages(10)
        .deadLetterPolicy(DeadLetterPolicy.builder().maxAttempts(maxAttempts)
            .backoff(Duration.ofMillis(1), Duration.ofMillis(1)).build())
        .build();
  }

  private double count(String name, String queue, String type) {
    var c = registry.find(name).tag("queue", queue).tag("type", type).counter();
    return c == null ? 0 : c.count();
  }

  @Test
  void handlerOutcomesCheckpointsAndDeadLettersAreCountedByQueueAndWorkType() {
    TetherMetrics metrics = TetherMetrics.builder().workTypes("render").build();
    metrics.bindTo(registry);
    LeaseManager leases = new LeaseManager(store, "enqueuer");
    leases.enqueue(NewWorkItem.builder("jobs").input("ok").workType("render").build());
    leases.enqueue(NewWorkItem.builder("jobs").input("fail").workType("render").maxAttempts(1).build());
    leases.enqueue(NewWorkItem.builder("jobs").input("ok").workType("user-supplied-42").build());
    leases.enqueue(NewWorkItem.builder("jobs").input("ok").build());
    AtomicReference<Double> inFlightDuringHandler = new AtomicReference<>();
    JdbcMailbox<String, String> mailbox = JdbcMailbox.ofStrings(store, "jobs");
    MainLoop<String, String> loop = MainLoop.builder("jobs-1", mailbox, (String body, dev.tether.loop.WorkContext ctx) -> {
          inFlightDuringHandler.set(registry.get(TetherMetrics.IN_FLIGHT).tag("queue", "jobs").gauge().value());
          ctx.checkpoint("step 1");
          if (body.equals("fail")) {
            throw new IllegalStateException("boom");
          }
          return "done";
        })
        .config(config(1))
        .listener(metrics.loopListener("jobs"))
        .extenderListener(metrics.extenderListener("jobs"))
        .build();
    loop.run(1);

    Timer ok = registry.find(TetherMetrics.HANDLER_DURATION).tags("queue", "jobs", "type", "render", "outcome", "success").timer();
    Timer failed = registry.find(TetherMetrics.HANDLER_DURATION).tags("queue", "jobs", "type", "render", "outcome", "failure").timer();
    assertThat(ok.count()).isEqualTo(1);
    assertThat(failed.count()).isEqualTo(1);
    assertThat(count(TetherMetrics.CHECKPOINTS, "jobs", "render")).isEqualTo(2);
    assertThat(count(TetherMetrics.DEAD_LETTERS, "jobs", "render")).isEqualTo(1);
    // a work type outside the configured set, and none at all, are bounded tag values
    assertThat(registry.find(TetherMetrics.HANDLER_DURATION).tags("type", TetherMetrics.OTHER, "outcome", "success").timer().count()).isEqualTo(1);
    assertThat(registry.find(TetherMetrics.HANDLER_DURATION).tags("type", TetherMetrics.NONE, "outcome", "success").timer().count()).isEqualTo(1);
    assertThat(registry.find(TetherMetrics.HANDLER_DURATION).tag("type", "user-supplied-42").timer()).isNull();
    assertThat(inFlightDuringHandler.get()).isEqualTo(1.0);
    assertThat(registry.get(TetherMetrics.IN_FLIGHT).tag("queue", "jobs").gauge().value()).isZero();
    // percentiles and histogram are off by default
    assertThat(ok.takeSnapshot().percentileValues()).isEmpty();
    assertThat(ok.takeSnapshot().histogramCounts()).isEmpty();
  }

  @Test
  void aRedeliveryAndALeaseExtensionAreCounted() {
    SettableTicker ticker = new SettableTicker();
    TetherMetrics metrics = TetherMetrics.builder().build();
    metrics.bindTo(registry);
    JdbcMailbox<String, String> mailbox = JdbcMailbox.ofStrings(store, "q");
    mailbox.send("x");
    // a first delivery handed back (uncharged): the next delivery is a redelivery
    mailbox.receive(1, Duration.ofMinutes(5), Duration.ZERO).get(0).handBack();
    MainLoop<String, String> loop = MainLoop.builder("q-1", mailbox, (String body, dev.tether.loop.WorkContext ctx) -> {
          ticker.advance(Duration.ofSeconds(61));
          ctx.beat(); // due: extends the lease
          return "done";
        })
        .ticker(ticker)
        .config(MainLoopConfig.builder().waitTime(Duration.ZERO)
            .leaseExtender(LeaseExtenderConfig.of(Duration.ofSeconds(60), Duration.ofMinutes(5))).build())
        .listener(metrics.loopListener("q"))
        .extenderListener(metrics.extenderListener("q"))
        .build();
    loop.run(1);

    assertThat(count(TetherMetrics.REDELIVERIES, "q", TetherMetrics.NONE)).isEqualTo(1);
    assertThat(count(TetherMetrics.EXTENSIONS, "q", TetherMetrics.NONE)).isEqualTo(1);
    assertThat(count(TetherMetrics.EXTENSION_FAILURES, "q", TetherMetrics.NONE)).isZero();
  }

  @Test
  void queueTagIsOtherOutsideTheConfiguredQueues() {
    TetherMetrics metrics = TetherMetrics.builder().queues("a").build();
    metrics.bindTo(registry);
    metrics.loopListener("a");
    metrics.loopListener("b");
    assertThat(registry.find(TetherMetrics.IN_FLIGHT).gauges())
        .extracting(g -> g.getId().getTag("queue"))
        .containsExactlyInAnyOrder("a", TetherMetrics.OTHER);
  }

  @Test
  void workTypesSeenAreCappedAtMaxTagValues() {
    TagValues values = TagValues.firstSeen(2);
    assertThat(values.of("a")).isEqualTo("a");
    assertThat(values.of("b")).isEqualTo("b");
    assertThat(values.of("c")).isEqualTo(TetherMetrics.OTHER);
    assertThat(values.of("a")).isEqualTo("a");
    assertThat(values.of(null)).isEqualTo(TetherMetrics.NONE);
  }

  @Test
  void heartbeatAgeGrowsUntilTheLoopBeats() {
    SettableTicker ticker = new SettableTicker();
    TetherMetrics metrics = TetherMetrics.builder().build();
    metrics.bindTo(registry);
    MainLoop<String, String> loop = MainLoop.builder("w0", JdbcMailbox.ofStrings(store, "q"), (String b, dev.tether.loop.WorkContext c) -> b)
        .ticker(ticker).build();
    metrics.watch(loop);
    ticker.advance(Duration.ofSeconds(7));
    var age = registry.get(TetherMetrics.HEARTBEAT_AGE).tag("loop", "w0").timeGauge();
    assertThat(age.value(java.util.concurrent.TimeUnit.SECONDS)).isEqualTo(7.0);
    loop.heartbeat().beat();
    assertThat(age.value(java.util.concurrent.TimeUnit.SECONDS)).isZero();
  }

  @Test
  void aLoopWatchedUnderTheNameOfAnEarlierOneIsTheOneItsGaugeReads() {
    // a group started again in the same process: new loops with the old names
    SettableTicker ticker = new SettableTicker();
    TetherMetrics metrics = TetherMetrics.builder().build();
    metrics.bindTo(registry);
    MainLoop<String, String> first = MainLoop.builder("w0", JdbcMailbox.ofStrings(store, "q"),
        (String b, dev.tether.loop.WorkContext c) -> b).ticker(ticker).build();
    metrics.watch(first);
    ticker.advance(Duration.ofMinutes(30)); // the first run ended long ago
    MainLoop<String, String> second = MainLoop.builder("w0", JdbcMailbox.ofStrings(store, "q"),
        (String b, dev.tether.loop.WorkContext c) -> b).ticker(ticker).build();
    second.heartbeat().beat();
    metrics.watch(second);
    ticker.advance(Duration.ofSeconds(3));
    assertThat(registry.get(TetherMetrics.HEARTBEAT_AGE).timeGauges()).hasSize(1);
    assertThat(registry.get(TetherMetrics.HEARTBEAT_AGE).tag("loop", "w0").timeGauge()
        .value(java.util.concurrent.TimeUnit.SECONDS)).isEqualTo(3.0);
  }

  @Test
  void eventsBeforeBindingAreNotCountedAndAfterBindingAre() {
    TetherMetrics metrics = TetherMetrics.builder().build();
    MainLoop.Listener listener = metrics.loopListener("q");
    JdbcMailbox<String, String> mailbox = JdbcMailbox.builder(store, "q", Codec.utf8(), Codec.utf8()).build();
    mailbox.send("x");
    var message = mailbox.receive(1, Duration.ofMinutes(1), Duration.ZERO).get(0);
    listener.cancelled(message);
    metrics.bindTo(registry);
    listener.cancelled(message);
    assertThat(count(TetherMetrics.CANCELLATIONS, "q", TetherMetrics.NONE)).isEqualTo(1);
  }

  @Test
  void builderRejectsBadValuesNamingThem() {
    assertThatThrownBy(() -> TetherMetrics.builder().handlerPercentiles(1.5))
        .hasMessageContaining("1.5");
    assertThatThrownBy(() -> TetherMetrics.builder().maxTagValues(0))
        .hasMessageContaining("maxTagValues");
    assertThatThrownBy(() -> TetherMetrics.builder().queues(" "))
        .hasMessageContaining("blank");
  }

  @Test
  void percentilesAndHistogramWhenConfigured() {
    PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    TetherMetrics plain = TetherMetrics.builder().build();
    plain.bindTo(prometheus);
    JdbcMailbox<String, String> mailbox = JdbcMailbox.ofStrings(store, "q");
    mailbox.send("x");
    var message = mailbox.receive(1, Duration.ofMinutes(1), Duration.ZERO).get(0);
    plain.loopListener("q").completed(message, Duration.ofMillis(20));
    assertThat(prometheus.scrape()).contains("tether_handler_duration_seconds_count")
        .doesNotContain("_bucket").doesNotContain("quantile=");

    PrometheusMeterRegistry withPercentiles = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    TetherMetrics percentiles = TetherMetrics.builder().handlerPercentiles(0.5, 0.99).build();
    percentiles.bindTo(withPercentiles);
    percentiles.loopListener("q").completed(message, Duration.ofMillis(20));
    assertThat(withPercentiles.scrape()).contains("quantile=\"0.99\"").doesNotContain("_bucket");

    PrometheusMeterRegistry withHistogram = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    TetherMetrics histogram = TetherMetrics.builder().handlerHistogram(true).build();
    histogram.bindTo(withHistogram);
    histogram.loopListener("q").completed(message, Duration.ofMillis(20));
    assertThat(withHistogram.scrape()).contains("tether_handler_duration_seconds_bucket{");
  }
}
