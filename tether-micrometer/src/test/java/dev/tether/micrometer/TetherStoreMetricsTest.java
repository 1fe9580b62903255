package dev.tether.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.PostgresTestSchema;
import dev.tether.jdbc.QueueCount;
import dev.tether.jdbc.RecoverySweep;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkStatus;
import dev.tether.test.SettableTicker;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TetherStoreMetricsTest {
  @TempDir Path dir;
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  /** Reads the store the way a scrape does: through the gauge that is always there. */
  private double queues() {
    return registry.get(TetherStoreMetrics.STORE_QUEUES).gauge().value();
  }

  private double items(String queue, String status) {
    return registry.get(TetherStoreMetrics.QUEUE_ITEMS).tag("queue", queue).tag("status", status)
        .gauge().value();
  }

  @Test
  void queueDepthByStatusIsReadFromTheStoreOnPostgres() {
    try (PostgresTestSchema schema = new PostgresTestSchema("tether_mm_");
        TetherStore store = TetherStore.open(schema.url())) {
      JdbcMailbox<String, String> jobs = JdbcMailbox.ofStrings(store, "jobs");
      jobs.send("a");
      jobs.send("b");
      jobs.receive(1, Duration.ofMinutes(1), Duration.ZERO).get(0).acknowledge();
      SettableTicker ticker = new SettableTicker();
      new TetherStoreMetrics(store, Duration.ofSeconds(15), Set.of(), ticker).bindTo(registry);
      assertThat(queues()).isEqualTo(1);
      assertThat(items("jobs", "pending")).isEqualTo(1);
      assertThat(items("jobs", "completed")).isEqualTo(1);
      assertThat(items("jobs", "failed")).isZero();
    }
  }

  @Test
  void theStoreIsReadAtMostOncePerRefreshAndNewQueuesAppear() {
    SettableTicker ticker = new SettableTicker();
    AtomicInteger reads = new AtomicInteger();
    List<QueueCount> rows = new ArrayList<>(List.of(new QueueCount("a", WorkStatus.PENDING, 3)));
    TetherStoreMetrics m = new TetherStoreMetrics(() -> {
      reads.incrementAndGet();
      return List.copyOf(rows);
    }, Map::of, Duration.ofSeconds(10), Set.of(), ticker);
    m.bindTo(registry);
    assertThat(reads).as("nothing is read before a scrape").hasValue(0);
    assertThat(queues()).isEqualTo(1);
    assertThat(items("a", "pending")).isEqualTo(3);
    rows.add(new QueueCount("b", WorkStatus.FAILED, 2));
    rows.set(0, new QueueCount("a", WorkStatus.PENDING, 5));
    for (int i = 0; i < 5; i++) {
      assertThat(items("a", "pending")).isEqualTo(3); // cached
    }
    assertThat(reads).hasValue(1);
    ticker.advance(Duration.ofSeconds(10));
    assertThat(items("a", "pending")).isEqualTo(5);
    assertThat(reads).hasValue(2);
    assertThat(items("b", "failed")).isEqualTo(2);
    assertThat(queues()).isEqualTo(2);
  }

  @Test
  void aStoreThatIsSlowToAnswerDoesNotHoldTheScrape() throws Exception {
    SettableTicker ticker = new SettableTicker();
    java.util.concurrent.CountDownLatch answer = new java.util.concurrent.CountDownLatch(1);
    AtomicInteger reads = new AtomicInteger();
    TetherStoreMetrics m = new TetherStoreMetrics(() -> {
      if (reads.incrementAndGet() > 1) {
        try {
          answer.await(); // a store that does not answer (a connection timeout, say)
        } catch (InterruptedException e) {
          throw new IllegalStateException(e);
        }
        return List.of(new QueueCount("a", WorkStatus.PENDING, 5));
      }
      return List.of(new QueueCount("a", WorkStatus.PENDING, 3));
    }, Map::of, Duration.ofSeconds(10), Set.of(), ticker, Duration.ZERO);
    m.bindTo(registry);
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> queues() == 1);
    assertThat(items("a", "pending")).isEqualTo(3);

    ticker.advance(Duration.ofSeconds(10));
    assertThat(items("a", "pending")).as("the figures read before").isEqualTo(3);
    assertThat(queues()).isEqualTo(1);
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> reads.get() == 2);
    assertThat(items("a", "pending")).isEqualTo(3);
    assertThat(reads).as("one read in flight, not one per gauge").hasValue(2);
    ticker.advance(Duration.ofSeconds(10));
    assertThat(items("a", "pending")).as("two intervals old: unknown").isNaN();
    assertThat(reads).hasValue(2);

    answer.countDown();
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10))
        .until(() -> items("a", "pending") == 5);
  }

  @Test
  void onlyConfiguredQueuesAreTaggedOthersAreSummedAsOther() {
    TetherStoreMetrics m = new TetherStoreMetrics(() -> List.of(
        new QueueCount("a", WorkStatus.PENDING, 1),
        new QueueCount("tenant-1", WorkStatus.PENDING, 2),
        new QueueCount("tenant-2", WorkStatus.PENDING, 4)), Map::of, Duration.ofSeconds(10),
        Set.of("a"), new SettableTicker());
    m.bindTo(registry);
    assertThat(queues()).isEqualTo(3);
    assertThat(items("a", "pending")).isEqualTo(1);
    assertThat(items(TetherMetrics.OTHER, "pending")).isEqualTo(6);
    assertThat(registry.find(TetherStoreMetrics.QUEUE_ITEMS).tag("queue", "tenant-1").gauge()).isNull();
  }

  @Test
  void aStoreThatCannotBeReadGivesNaNUntilItCanAgain() {
    SettableTicker ticker = new SettableTicker();
    AtomicInteger calls = new AtomicInteger();
    TetherStoreMetrics m = new TetherStoreMetrics(() -> {
      if (calls.incrementAndGet() == 2) {
        throw new IllegalStateException("database down");
      }
      return List.of(new QueueCount("a", WorkStatus.PENDING, 1));
    }, Map::of, Duration.ofSeconds(1), Set.of(), ticker);
    m.bindTo(registry);
    assertThat(queues()).isEqualTo(1);
    assertThat(items("a", "pending")).isEqualTo(1);
    ticker.advance(Duration.ofSeconds(1));
    assertThat(items("a", "pending")).isNaN();
    assertThat(queues()).isNaN();
    ticker.advance(Duration.ofSeconds(1));
    assertThat(items("a", "pending")).isEqualTo(1);
  }

  @Test
  void checkpointsKeptInTheStoreAreAGaugeThatMayDrop() {
    SettableTicker ticker = new SettableTicker();
    java.util.concurrent.atomic.AtomicReference<Map<String, Long>> counts =
        new java.util.concurrent.atomic.AtomicReference<>(Map.of("lease_expired", 4L));
    TetherStoreMetrics m = new TetherStoreMetrics(List::of, counts::get,
        Duration.ofSeconds(1), Set.of(), ticker);
    m.bindTo(registry);
    queues();
    var gauge = registry.get(TetherStoreMetrics.STORE_CHECKPOINTS).tag("kind", "lease_expired").gauge();
    assertThat(gauge.value()).isEqualTo(4);
    counts.set(Map.of("lease_expired", 1L)); // a purge
    ticker.advance(Duration.ofSeconds(1));
    assertThat(gauge.value()).isEqualTo(1);
  }

  @Test
  void aBinderBoundAndDroppedInOneExpressionKeepsReporting() {
    // new TetherStoreMetrics(store).bindTo(registry), nothing else holding it: the registry must
    java.lang.ref.WeakReference<TetherStoreMetrics> ref = bindAndDrop();
    for (int i = 0; i < 5 && ref.get() != null; i++) {
      System.gc();
    }
    assertThat(ref.get()).as("the registry keeps the binder its gauges read").isNotNull();
    assertThat(queues()).isEqualTo(1);
  }

  private java.lang.ref.WeakReference<TetherStoreMetrics> bindAndDrop() {
    TetherStoreMetrics m = new TetherStoreMetrics(
        () -> List.of(new QueueCount("a", WorkStatus.PENDING, 1)), Map::of, Duration.ofSeconds(10),
        Set.of(), new SettableTicker());
    m.bindTo(registry);
    return new java.lang.ref.WeakReference<>(m);
  }

  @Test
  void refreshUnderOneSecondIsRefused() {
    assertThatThrownBy(() -> new TetherStoreMetrics(List::of, Map::of, Duration.ofMillis(10),
        Set.of(), new SettableTicker())).hasMessageContaining("refresh must be at least 1 s");
  }

  @Test
  void sweepCountersReadThisProcesssSweep() {
    try (TetherStore store = TetherStore.open(dir.resolve("s.db").toString());
        RecoverySweep sweep = new RecoverySweep(store)) {
      new RecoverySweepMetrics(sweep).bindTo(registry);
      sweep.scanAndRecover();
      sweep.scanAndRecover();
      assertThat(registry.get(RecoverySweepMetrics.SCANS).functionCounter().count()).isEqualTo(2);
      assertThat(registry.get(RecoverySweepMetrics.RECOVERED).functionCounter().count()).isZero();
    }
  }
}
