package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** RecoverySweep behaviour every engine must show (subclass per engine). */
abstract class RecoverySweepCompatibilityTest extends StoreTestBase {
  static final Duration LEASE = Duration.ofSeconds(30);

  @Test
  void sweepRequeuesExpiredLeasesWithOneCheckpointEach() {
    LeaseManager w = new LeaseManager(store, "dead-worker");
    long a = w.enqueue(NewWorkItem.of("q", "a"));
    long b = w.enqueue(NewWorkItem.of("q", "b"));
    w.acquire(AcquireRequest.batch("q", LEASE, 2));
    RecoverySweep sweep = new RecoverySweep(store);
    assertThat(sweep.scanAndRecover().expiredFound()).as("nothing expired yet").isZero();
    clock.advance(LEASE);
    RecoveryStats s = sweep.scanAndRecover();
    assertThat(s.expiredFound()).isEqualTo(2);
    assertThat(s.recovered()).isEqualTo(2);
    assertThat(s.failed()).isZero();
    assertThat(s.checkpointsCreated()).isEqualTo(2);
    assertThat(s.errors()).isZero();
    assertThat(sweep.scanAndRecover().recovered()).as("second pass finds nothing").isZero();
    for (long id : new long[] {a, b}) {
      WorkItem item = w.find(id).orElseThrow();
      assertThat(item.status()).isEqualTo(WorkStatus.PENDING);
      assertThat(item.leaseToken()).isNull();
      assertThat(item.checkpoints()).singleElement().satisfies(c -> {
        assertThat(c.kind()).isEqualTo(Checkpoint.LEASE_EXPIRED);
        assertThat(c.leaseHolder()).isEqualTo("dead-worker");
        assertThat(c.deliveryCount()).isEqualTo(1);
      });
    }
    SweepStatistics totals = sweep.statistics();
    assertThat(totals.totalScans()).isEqualTo(3);
    assertThat(totals.totalRecovered()).isEqualTo(2);
    assertThat(totals.totalCheckpoints()).isEqualTo(2);
    assertThat(totals.lastScan().recovered()).isZero();
  }

  @Test
  void sweepThenAcquireCountsTheExpiryOnce() {
    LeaseManager w = new LeaseManager(store, "w");
    long id = w.enqueue(NewWorkItem.of("q", "a"));
    w.acquire("q", LEASE).orElseThrow();
    clock.advance(LEASE.plusSeconds(1));
    new RecoverySweep(store).scanAndRecover();
    Lease again = w.acquire("q", LEASE).orElseThrow();
    assertThat(again.deliveryCount()).isEqualTo(2);
    assertThat(w.find(id).orElseThrow().checkpoints()).hasSize(1);
  }

  @Test
  void sweepFailsAnItemWhoseDeliveriesReachedMaxAttempts() {
    LeaseManager w = new LeaseManager(store, "w");
    long id = w.enqueue(NewWorkItem.builder("q").maxAttempts(1).build());
    w.acquire("q", LEASE).orElseThrow();
    clock.advance(LEASE);
    RecoveryStats s = new RecoverySweep(store).scanAndRecover();
    assertThat(s.failed()).isEqualTo(1);
    assertThat(s.recovered()).isZero();
    WorkItem item = w.find(id).orElseThrow();
    assertThat(item.status()).isEqualTo(WorkStatus.FAILED);
    assertThat(item.errorMessage()).contains("no attempts left");
  }

  @Test
  void renewalBetweenTheSweepsReadAndWriteSurvives() {
    LeaseManager w = new LeaseManager(store, "slow-but-alive");
    long id = w.enqueue(NewWorkItem.of("q", "a"));
    Lease l = w.acquire("q", LEASE).orElseThrow();
    clock.advance(LEASE.plusSeconds(1));
    RecoverySweep sweep = new RecoverySweep(store);
    AtomicReference<java.time.Instant> renewedTo = new AtomicReference<>();
    // The seed's race: the sweep has read the expired row; the worker renews before the write.
    sweep.afterReadHook(() -> renewedTo.set(w.renew(id, l.token(), LEASE)));
    RecoveryStats s = sweep.scanAndRecover();
    assertThat(renewedTo.get()).isAfter(clock.instant());
    assertThat(s.expiredFound()).isEqualTo(1);
    assertThat(s.recovered()).isZero();
    assertThat(s.checkpointsCreated()).isZero();
    WorkItem item = w.find(id).orElseThrow();
    assertThat(item.status()).isEqualTo(WorkStatus.IN_PROGRESS);
    assertThat(item.leaseToken()).isEqualTo(l.token());
    assertThat(item.leaseExpiresAt()).isEqualTo(renewedTo.get());
    assertThat(item.checkpoints()).isEmpty();
    w.complete(id, l.token(), null);
  }

  @Test
  void takeoverBetweenTheSweepsReadAndWriteIsNotCountedTwice() {
    LeaseManager w = new LeaseManager(store, "w");
    LeaseManager other = new LeaseManager(store, "other");
    long id = w.enqueue(NewWorkItem.of("q", "a"));
    w.acquire("q", LEASE).orElseThrow();
    clock.advance(LEASE.plusSeconds(1));
    RecoverySweep sweep = new RecoverySweep(store);
    sweep.afterReadHook(() -> other.acquire("q", LEASE).orElseThrow());
    RecoveryStats s = sweep.scanAndRecover();
    assertThat(s.recovered()).isZero();
    WorkItem item = w.find(id).orElseThrow();
    assertThat(item.leaseHolder()).isEqualTo("other");
    assertThat(item.deliveryCount()).isEqualTo(2);
    assertThat(item.checkpoints()).hasSize(1);
  }

  @Test
  void retentionKeepsTheNewestCheckpointsPerItemAndDeletesOldFinishedItems() {
    LeaseManager w = new LeaseManager(store, "w");
    long poison = w.enqueue(NewWorkItem.builder("q").maxAttempts(5).build());
    for (int i = 0; i < 5; i++) {
      w.acquire("q", LEASE).orElseThrow();
      clock.advance(LEASE);
    }
    w.acquire("q", LEASE); // fails it
    long done = w.enqueue(NewWorkItem.of("q2", "x"));
    Lease l = w.acquire("q2", LEASE).orElseThrow();
    w.complete(done, l.token(), null);
    clock.advance(Duration.ofDays(2));
    long fresh = w.enqueue(NewWorkItem.of("q2", "y"));
    RecoverySweep sweep = new RecoverySweep(store, RecoverySweepConfig.builder()
        .checkpointsPerItem(2).build());
    sweep.cleanup();
    assertThat(w.find(poison).orElseThrow().checkpoints()).hasSize(2)
        .allSatisfy(c -> assertThat(c.deliveryCount()).isGreaterThanOrEqualTo(4));
    RecoverySweep aging = new RecoverySweep(store, RecoverySweepConfig.builder()
        .finishedItemMaxAge(Duration.ofDays(1)).build());
    assertThat(aging.cleanup()).isGreaterThan(0);
    assertThat(w.find(poison)).isEmpty();
    assertThat(w.find(done)).isEmpty();
    assertThat(w.find(fresh)).isPresent();
  }

  @Test
  void retentionDeletesCheckpointsOlderThanTheConfiguredAge() {
    LeaseManager w = new LeaseManager(store, "w");
    long id = w.enqueue(NewWorkItem.builder("q").maxAttempts(5).build());
    w.acquire("q", LEASE).orElseThrow();
    clock.advance(LEASE);
    w.acquire("q", LEASE).orElseThrow(); // first checkpoint, now 31 days old below
    clock.advance(Duration.ofDays(31));
    w.acquire("q", LEASE).orElseThrow(); // second checkpoint, fresh
    new RecoverySweep(store, RecoverySweepConfig.builder().checkpointMaxAge(Duration.ofDays(30)).build()).cleanup();
    assertThat(w.find(id).orElseThrow().checkpoints()).singleElement()
        .satisfies(c -> assertThat(c.deliveryCount()).isEqualTo(2));
  }

  @Test
  void backgroundSweepRunsOnItsOwnNamedThreadAndStopsIdempotently() {
    LeaseManager w = new LeaseManager(store, "w");
    w.enqueue(NewWorkItem.of("q", "a"));
    w.acquire("q", LEASE).orElseThrow();
    clock.advance(LEASE);
    RecoverySweep sweep = new RecoverySweep(store, RecoverySweepConfig.builder()
        .scanInterval(Duration.ofMillis(50)).build());
    sweep.start();
    try {
      assertThat(sweep.isRunning()).isTrue();
      assertThat(Thread.getAllStackTraces().keySet()).anyMatch(t -> t.getName().equals("tether-recovery-sweep"));
      assertThatThrownBy(sweep::start).isInstanceOf(IllegalStateException.class);
      await().atMost(Duration.ofSeconds(5)).until(() -> sweep.statistics().totalRecovered() == 1);
      assertThat(sweep.statistics().running()).isTrue();
    } finally {
      sweep.stop();
      sweep.stop();
    }
    assertThat(sweep.isRunning()).isFalse();
    assertThat(sweep.statistics().running()).isFalse();
  }
}
