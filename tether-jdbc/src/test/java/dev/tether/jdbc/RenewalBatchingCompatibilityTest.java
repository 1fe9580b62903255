package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.test.SettableTicker;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Batched lease renewals ({@link RenewalBatcher}) on every engine (subclass per engine). */
abstract class RenewalBatchingCompatibilityTest extends StoreTestBase {
  static final Duration LEASE = Duration.ofMinutes(1);

  @Test
  void concurrentRenewalsShareBatchesAndEachGetsItsOwnOutcome() throws Exception {
    LeaseManager w = new LeaseManager(store, "w");
    int n = 40;
    for (int i = 0; i < n; i++) {
      w.enqueue(NewWorkItem.of("q", "item-" + i));
    }
    List<Lease> leases = w.acquire(AcquireRequest.batch("q", LEASE, n));
    assertThat(leases).hasSize(n);
    clock.advance(Duration.ofSeconds(5));
    Instant renewedTo = clock.instant().plus(LEASE);
    long batchesBefore = store.renewalBatcher().batchesRun();

    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      CountDownLatch go = new CountDownLatch(1);
      List<Future<Object>> outcomes = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        Lease l = leases.get(i);
        long token = i == 0 ? l.token() ^ 1 : l.token(); // the first renews with a stale token
        outcomes.add(pool.submit(() -> {
          go.await();
          try {
            return w.renew(l.itemId(), token, LEASE);
          } catch (RuntimeException e) {
            return e;
          }
        }));
      }
      go.countDown();
      assertThat(outcomes.get(0).get(30, TimeUnit.SECONDS))
          .as("the stale token is refused on its own").isInstanceOf(LeaseConflictException.class);
      for (int i = 1; i < n; i++) {
        assertThat(outcomes.get(i).get(30, TimeUnit.SECONDS)).as("lease %d", i).isEqualTo(renewedTo);
        assertThat(w.find(leases.get(i).itemId()).orElseThrow().leaseExpiresAt()).isEqualTo(renewedTo);
      }
    } finally {
      pool.shutdownNow();
    }
    long batches = store.renewalBatcher().batchesRun() - batchesBefore;
    assertThat(batches).as("renewals arriving together share batches").isBetween(1L, (long) n - 1);
    assertThat(w.find(leases.get(0).itemId()).orElseThrow().leaseExpiresAt())
        .as("the refused renewal changed nothing").isEqualTo(leases.get(0).expiresAt());
  }

  @Test
  void aBatchStartsAGapAfterTheLastAndRenewalsQueuedDuringThePauseJoinIt() throws Exception {
    LeaseManager w = new LeaseManager(store, "w");
    for (int i = 0; i < 5; i++) {
      w.enqueue(NewWorkItem.of("q", "item-" + i));
    }
    List<Lease> leases = w.acquire(AcquireRequest.batch("q", LEASE, 5));
    assertThat(leases).hasSize(5);
    RenewalBatcher batcher = store.renewalBatcher();
    SettableTicker ticker = new SettableTicker();
    List<Long> sleeps = new CopyOnWriteArrayList<>();
    // The pause lasts until the leader's renewal and three more are queued, then "sleeps" on the ticker.
    batcher.pacing(ticker, nanos -> {
      sleeps.add(nanos);
      await().atMost(Duration.ofSeconds(30)).until(() -> batcher.queued() >= 4);
      ticker.advance(Duration.ofNanos(nanos));
    });
    long batches0 = batcher.batchesRun();

    w.renew(leases.get(0).itemId(), leases.get(0).token(), LEASE);
    assertThat(sleeps).as("the first batch after a quiet gap starts at once").isEmpty();
    assertThat(batcher.batchesRun()).isEqualTo(batches0 + 1);

    ticker.advance(Duration.ofMillis(5));
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<Instant>> renewed = new ArrayList<>();
      renewed.add(pool.submit(() -> w.renew(leases.get(1).itemId(), leases.get(1).token(), LEASE)));
      await().atMost(Duration.ofSeconds(30)).until(() -> !sleeps.isEmpty()); // its leader pauses
      for (int i = 2; i < 5; i++) {
        Lease l = leases.get(i);
        renewed.add(pool.submit(() -> w.renew(l.itemId(), l.token(), LEASE)));
      }
      for (Future<Instant> f : renewed) {
        assertThat(f.get(30, TimeUnit.SECONDS)).isEqualTo(clock.instant().plus(LEASE));
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(sleeps).as("the leader waited out the rest of the gap, once")
        .containsExactly(RenewalBatcher.MIN_GAP.minusMillis(5).toNanos());
    assertThat(batcher.batchesRun()).as("the four renewals shared one batch").isEqualTo(batches0 + 2);

    ticker.advance(RenewalBatcher.MIN_GAP);
    w.renew(leases.get(0).itemId(), leases.get(0).token(), LEASE);
    assertThat(sleeps).as("a gap later a batch starts at once").hasSize(1);
    assertThat(batcher.batchesRun()).isEqualTo(batches0 + 3);
  }
}
