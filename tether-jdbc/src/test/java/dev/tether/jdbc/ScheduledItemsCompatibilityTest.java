package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Delayed items (a delay at enqueue, a retry backoff, a hand-back delay) are flagged
 * {@code scheduled} and kept out of the index the picks scan until an acquisition promotes them
 * once due; every engine must show the same behaviour (subclass per engine).
 */
abstract class ScheduledItemsCompatibilityTest extends StoreTestBase {
  static final Duration LEASE = Duration.ofSeconds(30);

  /** The stored {@code scheduled} flag of an item. */
  boolean scheduled(long id) throws Exception {
    try (Connection c = store.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT scheduled FROM tether_work_items WHERE id = ?")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as("item %d exists", id).isTrue();
        return rs.getBoolean(1);
      }
    }
  }

  void setScheduled(long id, boolean value) throws Exception {
    try (Connection c = store.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement("UPDATE tether_work_items SET scheduled = ? WHERE id = ?")) {
      ps.setBoolean(1, value);
      ps.setLong(2, id);
      assertThat(ps.executeUpdate()).isEqualTo(1);
    }
  }

  static NewWorkItem later(String input, Duration delay) {
    return NewWorkItem.builder("q").input(input).delay(delay).build();
  }

  /** Enqueues {@code n} items on queue q, each due after {@code delay}; returns their ids. */
  List<Long> enqueueLater(int n, Duration delay) {
    List<NewWorkItem> items = new java.util.ArrayList<>();
    for (int i = 0; i < n; i++) {
      items.add(later("later-" + i, delay));
    }
    return new LeaseManager(store, "producer").enqueueAll(items);
  }

  /**
   * Acquires (batches of {@code batch}) and completes until an acquisition returns nothing;
   * returns the ids in delivery order.
   */
  static List<Long> drain(LeaseManager w, int batch) {
    List<Long> delivered = new java.util.ArrayList<>();
    List<Lease> got;
    while (!(got = w.acquire(AcquireRequest.batch("q", LEASE, batch))).isEmpty()) {
      for (Lease l : got) {
        delivered.add(l.itemId());
        w.complete(l.itemId(), l.token(), null);
      }
    }
    return delivered;
  }

  @Test
  void delayedEnqueuesAreScheduledAndOnlyTheReadyItemsArePickedUntilTheyAreDue() throws Exception {
    LeaseManager w = new LeaseManager(store, "w");
    long single = w.enqueue(later("single", Duration.ofSeconds(5)));
    long inTx;
    try (Connection c = store.dataSource().getConnection()) {
      inTx = w.enqueue(c, later("in-tx", Duration.ofSeconds(5)));
    }
    List<Long> batch = w.enqueueAll(List.of(NewWorkItem.of("q", "now-1"), later("batch", Duration.ofSeconds(5)),
        NewWorkItem.of("q", "now-2")));

    assertThat(List.of(scheduled(single), scheduled(inTx), scheduled(batch.get(0)), scheduled(batch.get(1)),
        scheduled(batch.get(2)))).containsExactly(true, true, false, true, false);
    assertThat(w.acquire(AcquireRequest.batch("q", LEASE, 10))).extracting(Lease::itemId)
        .containsExactly(batch.get(0), batch.get(2));

    clock.advance(Duration.ofSeconds(5));
    assertThat(w.acquire(AcquireRequest.batch("q", LEASE, 10))).extracting(Lease::itemId)
        .containsExactly(single, inTx, batch.get(1));
    assertThat(scheduled(single)).as("promoted before it was picked").isFalse();
  }

  @Test
  void aDueDelayedItemKeepsItsPlaceInSendOrderAmongReadyItemsOfItsPriority() {
    LeaseManager w = new LeaseManager(store, "w");
    long first = w.enqueue(later("first", Duration.ofSeconds(5)));
    long second = w.enqueue(NewWorkItem.of("q", "second"));
    long urgent = w.enqueue(NewWorkItem.builder("q").input("urgent").priority(5).build());
    clock.advance(Duration.ofSeconds(5));

    assertThat(w.acquire(AcquireRequest.batch("q", LEASE, 3))).extracting(Lease::itemId)
        .containsExactly(urgent, first, second);
  }

  @Test
  void backoffAndHandBackDelaysScheduleTheItemAndImmediateRequeuesDoNot() throws Exception {
    LeaseManager w = new LeaseManager(store, "w",
        LeaseManagerConfig.defaults().withRetryBackoff(Duration.ofSeconds(10), Duration.ofMinutes(1)));
    long id = w.enqueue(NewWorkItem.builder("q").input("x").maxAttempts(10).build());

    Lease l1 = w.acquire("q", LEASE).orElseThrow();
    assertThat(w.release(id, l1.token(), false, null, "boom")).isEqualTo(ReleaseOutcome.RETRY_SCHEDULED);
    assertThat(scheduled(id)).as("after a failure with backoff").isTrue();
    assertThat(w.acquire("q", LEASE)).as("not before the backoff").isEmpty();
    clock.advance(Duration.ofSeconds(10));
    Lease l2 = w.acquire("q", LEASE).orElseThrow();

    w.handBack(id, l2.token(), Duration.ofMinutes(1));
    assertThat(scheduled(id)).as("after a delayed hand-back").isTrue();
    assertThat(w.acquire("q", LEASE)).isEmpty();
    clock.advance(Duration.ofMinutes(1));
    Lease l3 = w.acquire("q", LEASE).orElseThrow();

    w.handBack(id, l3.token(), Duration.ZERO);
    assertThat(scheduled(id)).as("after an immediate hand-back").isFalse();
    w.acquire("q", LEASE).orElseThrow();

    clock.advance(LEASE.plusSeconds(1)); // the lease expires: the sweep requeues it at once
    assertThat(new RecoverySweep(store).scanAndRecover().recovered()).isEqualTo(1);
    assertThat(scheduled(id)).as("after a recovered expiry").isFalse();
    assertThat(w.acquire("q", LEASE)).isPresent();
  }

  @Test
  void theFlagIsOnlyAHintForTheIndexAndNeverDecidesWhetherAnItemIsDue() throws Exception {
    LeaseManager w = new LeaseManager(store, "w");
    long flaggedButDue = w.enqueue(NewWorkItem.of("q", "a"));
    setScheduled(flaggedButDue, true); // as if written by a process that flagged it wrongly
    long notYetDueUnflagged = w.enqueue(later("b", Duration.ofMinutes(1)));
    setScheduled(notYetDueUnflagged, false); // as if written by a process that does not flag

    List<Lease> first = w.acquire(AcquireRequest.batch("q", LEASE, 10));
    assertThat(first).extracting(Lease::itemId).containsExactly(flaggedButDue);
    w.complete(flaggedButDue, first.get(0).token(), null);
    clock.advance(Duration.ofMinutes(1));
    assertThat(w.acquire(AcquireRequest.batch("q", LEASE, 10))).extracting(Lease::itemId)
        .containsExactly(notYetDueUnflagged);
  }

  @Test
  void aFilteredAcquisitionPromotesDueItemsToo() {
    LeaseManager w = new LeaseManager(store, "w");
    long typed = w.enqueue(NewWorkItem.builder("q").input("t").workType("agent").delay(Duration.ofSeconds(1)).build());
    clock.advance(Duration.ofSeconds(1));
    assertThat(w.acquire(new AcquireRequest("q", LEASE, 5, "agent", null))).extracting(Lease::itemId)
        .containsExactly(typed);
  }

  @Test
  void moreDueItemsThanOnePromotionTakesAreAllDeliveredInSendOrder() {
    List<Long> ids = enqueueLater(1005, Duration.ofSeconds(1));
    LeaseManager w = new LeaseManager(store, "w");
    clock.advance(Duration.ofSeconds(1));
    assertThat(drain(w, 100)).containsExactlyElementsOf(ids);
  }

  @Test
  void concurrentAcquisitionsPromotingTheSameDueItemsDeliverEachExactlyOnce() throws Exception {
    List<Long> ids = enqueueLater(300, Duration.ofSeconds(1));
    clock.advance(Duration.ofSeconds(1));
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(4);
    try {
      java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
      List<java.util.concurrent.Future<List<Long>>> workers = new java.util.ArrayList<>();
      for (int t = 0; t < 4; t++) {
        LeaseManager w = new LeaseManager(store, "w" + t);
        workers.add(pool.submit(() -> {
          go.await();
          return drain(w, 10);
        }));
      }
      go.countDown();
      List<Long> delivered = new java.util.ArrayList<>();
      for (java.util.concurrent.Future<List<Long>> f : workers) {
        delivered.addAll(f.get(60, java.util.concurrent.TimeUnit.SECONDS));
      }
      assertThat(delivered).containsExactlyInAnyOrderElementsOf(ids);
    } finally {
      pool.shutdownNow();
    }
  }
}

