package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Monitoring queries and hand-back on every engine (subclass per engine). */
abstract class QueueMonitorCompatibilityTest extends StoreTestBase {
  static final Duration LEASE = Duration.ofMinutes(5);

  @Test
  void countsByStatusPerQueue() {
    LeaseManager w = new LeaseManager(store, "w");
    w.enqueue(NewWorkItem.of("a", "1"));
    w.enqueue(NewWorkItem.of("a", "2"));
    w.enqueue(NewWorkItem.of("b", "3"));
    Lease l = w.acquire("a", LEASE).orElseThrow();
    w.complete(l.itemId(), l.token(), null);
    assertThat(new QueueMonitor(store).countsByStatus()).containsExactly(
        new QueueCount("a", WorkStatus.COMPLETED, 1),
        new QueueCount("a", WorkStatus.PENDING, 1),
        new QueueCount("b", WorkStatus.PENDING, 1));
  }

  @Test
  void inFlightAndStaleLeasesShowHeartbeatAgeAndTimeLeft() {
    LeaseManager w = new LeaseManager(store, "w");
    long quiet = w.enqueue(NewWorkItem.of("q", "quiet"));
    long busy = w.enqueue(NewWorkItem.of("q", "busy"));
    List<Lease> leases = w.acquire(AcquireRequest.batch("q", LEASE, 2));
    clock.advance(Duration.ofMinutes(3));
    Lease busyLease = leases.stream().filter(l -> l.itemId() == busy).findFirst().orElseThrow();
    w.renew(busy, busyLease.token(), LEASE);
    QueueMonitor monitor = new QueueMonitor(store);
    List<LeaseInfo> inFlight = monitor.inFlight("q");
    assertThat(inFlight).extracting(LeaseInfo::itemId).containsExactly(quiet, busy);
    assertThat(inFlight.get(0).heartbeatAge()).isEqualTo(Duration.ofMinutes(3));
    assertThat(inFlight.get(0).timeLeft()).isEqualTo(Duration.ofMinutes(2));
    assertThat(inFlight.get(1).heartbeatAge()).isEqualTo(Duration.ZERO);
    assertThat(monitor.staleLeases(Duration.ofMinutes(2))).extracting(LeaseInfo::itemId).containsExactly(quiet);
  }

  @Test
  void retryDistributionCountsFinishedItemsByDeliveries() {
    LeaseManager w = new LeaseManager(store, "w",
        LeaseManagerConfig.defaults().withRetryBackoff(Duration.ofMillis(1), Duration.ofMillis(1)));
    long once = w.enqueue(NewWorkItem.of("q", "once"));
    Lease l = w.acquire("q", LEASE).orElseThrow();
    w.complete(once, l.token(), null);
    long twice = w.enqueue(NewWorkItem.builder("q").maxAttempts(2).build());
    Lease t1 = w.acquire("q", LEASE).orElseThrow();
    w.release(twice, t1.token(), false, null, "flaky");
    clock.advance(Duration.ofMillis(1));
    Lease t2 = w.acquire("q", LEASE).orElseThrow();
    w.release(twice, t2.token(), false, null, "flaky again");
    assertThat(new QueueMonitor(store).retryDistribution("q")).isEqualTo(Map.of(1, 1L, 2, 1L));
    assertThat(new QueueMonitor(store).failedItems("q", 10)).extracting(WorkItem::id).containsExactly(twice);
  }

  @Test
  void handBackMakesTheItemAvailableAfterTheDelayWithoutChargingTheAttempt() {
    LeaseManager w = new LeaseManager(store, "w");
    long id = w.enqueue(NewWorkItem.builder("q").maxAttempts(1).build());
    Lease l = w.acquire("q", LEASE).orElseThrow();
    w.handBack(id, l.token(), Duration.ofSeconds(10));
    assertThat(w.acquire("q", LEASE)).isEmpty();
    clock.advance(Duration.ofSeconds(10));
    Lease again = w.acquire("q", LEASE).orElseThrow();
    assertThat(again.deliveryCount()).isEqualTo(2);
    assertThat(again.attempt()).as("the hand-back was not charged").isEqualTo(1);
    assertThat(w.find(id).orElseThrow().checkpoints()).extracting(Checkpoint::kind).containsExactly(Checkpoint.HANDED_BACK);
    w.release(id, again.token(), false, null, "the only attempt fails");
    assertThat(w.find(id).orElseThrow().status()).isEqualTo(WorkStatus.FAILED);
  }

  @Test
  void itemsListsNewestFirstFilteredByQueueAndStatusUpToTheLimit() {
    LeaseManager w = new LeaseManager(store, "w");
    long a1 = w.enqueue(NewWorkItem.of("a", "1"));
    long b1 = w.enqueue(NewWorkItem.of("b", "2"));
    long a2 = w.enqueue(NewWorkItem.of("a", "3"));
    long a3 = w.enqueue(NewWorkItem.of("a", "4"));
    Lease l = w.acquire("a", LEASE).orElseThrow();
    assertThat(l.itemId()).isEqualTo(a1);
    QueueMonitor monitor = new QueueMonitor(store);

    assertThat(monitor.items(ItemQuery.all())).extracting(WorkItem::id).containsExactly(a3, a2, b1, a1);
    assertThat(monitor.items(ItemQuery.all().withQueue("a"))).extracting(WorkItem::id).containsExactly(a3, a2, a1);
    assertThat(monitor.items(ItemQuery.all().withQueue("a").withStatus(WorkStatus.PENDING)))
        .extracting(WorkItem::id).containsExactly(a3, a2);
    assertThat(monitor.items(ItemQuery.all().withStatus(WorkStatus.IN_PROGRESS)))
        .extracting(WorkItem::id).containsExactly(a1);
    assertThat(monitor.items(ItemQuery.all().withLimit(2))).extracting(WorkItem::id).containsExactly(a3, a2);
    assertThat(monitor.items(ItemQuery.all().withQueue("none"))).isEmpty();
    assertThat(monitor.items(ItemQuery.all().withStatus(WorkStatus.FAILED))).isEmpty();
  }

  @Test
  void itemsInLeaseExpiryOrderPutTheSoonestExpiryFirstAndUnleasedItemsLast() {
    LeaseManager w = new LeaseManager(store, "w");
    long longLease = w.enqueue(NewWorkItem.of("q", "long"));
    long shortLease = w.enqueue(NewWorkItem.of("q", "short"));
    long waiting = w.enqueue(NewWorkItem.of("q", "waiting"));
    Lease first = w.acquire("q", Duration.ofMinutes(10)).orElseThrow();
    Lease second = w.acquire("q", Duration.ofMinutes(1)).orElseThrow();
    assertThat(first.itemId()).isEqualTo(longLease);
    assertThat(second.itemId()).isEqualTo(shortLease);
    QueueMonitor monitor = new QueueMonitor(store);

    assertThat(monitor.items(ItemQuery.inProgress(500))).extracting(WorkItem::id).containsExactly(shortLease, longLease);
    assertThat(monitor.items(ItemQuery.all().withOrder(ItemQuery.Order.LEASE_EXPIRY_FIRST)))
        .extracting(WorkItem::id).containsExactly(shortLease, longLease, waiting);
    assertThat(monitor.items(ItemQuery.inProgress(1))).extracting(WorkItem::id).containsExactly(shortLease);
  }

  @Test
  void listedItemsCarryTheirRowInputOutputAndErrorButNoCheckpoints() {
    LeaseManager w = new LeaseManager(store, "holder-1");
    long id = w.enqueue(NewWorkItem.builder("q").input("{\"argv\":[\"true\"]}").priority(3).maxAttempts(2).build());
    Lease l = w.acquire("q", LEASE).orElseThrow();
    w.release(id, l.token(), false, null, "first try failed");
    clock.advance(Duration.ofMinutes(5));
    Lease again = w.acquire("q", LEASE).orElseThrow();
    w.complete(id, again.token(), "out".getBytes(StandardCharsets.UTF_8));

    WorkItem listed = new QueueMonitor(store).items(ItemQuery.all()).get(0);
    WorkItem found = w.find(id).orElseThrow();
    assertThat(listed.checkpoints()).isEmpty();
    assertThat(found.checkpoints()).hasSize(1);
    assertThat(listed).usingRecursiveComparison().ignoringFields("checkpoints").isEqualTo(found);
    assertThat(listed.inputAsString()).isEqualTo("{\"argv\":[\"true\"]}");
    assertThat(listed.outputAsString()).isEqualTo("out");
    assertThat(listed.priority()).isEqualTo(3);
    assertThat(listed.deliveryCount()).isEqualTo(2);
    assertThat(listed.leaseHolder()).isEqualTo("holder-1");
    assertThat(listed.completedAt()).isEqualTo(clock.instant());
  }

  @Test
  void pendingCountCountsThePendingItemsOfOneQueueIncludingDelayedOnes() {
    LeaseManager w = new LeaseManager(store, "w");
    w.enqueue(NewWorkItem.of("a", "1"));
    w.enqueue(NewWorkItem.builder("a").delay(Duration.ofHours(1)).build());
    w.enqueue(NewWorkItem.of("a", "3"));
    w.enqueue(NewWorkItem.of("b", "4"));
    w.acquire("a", LEASE).orElseThrow();
    QueueMonitor monitor = new QueueMonitor(store);
    assertThat(monitor.pendingCount("a")).isEqualTo(2);
    assertThat(monitor.pendingCount("b")).isEqualTo(1);
    assertThat(monitor.pendingCount("none")).isZero();
  }

  @Test
  void countsByCheckpointKindCountsEveryKindOverAllQueues() {
    LeaseManager w = new LeaseManager(store, "w",
        LeaseManagerConfig.defaults().withRetryBackoff(Duration.ofMillis(1), Duration.ofMillis(1)));
    QueueMonitor monitor = new QueueMonitor(store);
    assertThat(monitor.countsByCheckpointKind()).isEmpty();
    long expiring = w.enqueue(NewWorkItem.of("a", "1"));
    w.acquire("a", Duration.ofSeconds(1)).orElseThrow();
    clock.advance(Duration.ofSeconds(2));
    Lease retaken = w.acquire("a", LEASE).orElseThrow();
    assertThat(retaken.itemId()).isEqualTo(expiring);
    w.release(expiring, retaken.token(), false, null, "boom");
    long handedBack = w.enqueue(NewWorkItem.of("b", "2"));
    Lease hb = w.acquire("b", LEASE).orElseThrow();
    w.handBack(handedBack, hb.token(), Duration.ZERO);
    long cancelled = w.enqueue(NewWorkItem.of("b", "3"));
    assertThat(new QueueAdmin(store).cancel(cancelled, "stop")).isTrue();

    assertThat(monitor.countsByCheckpointKind()).containsExactly(
        Map.entry(Checkpoint.CANCELLED, 1L),
        Map.entry(Checkpoint.HANDED_BACK, 1L),
        Map.entry(Checkpoint.LEASE_EXPIRED, 1L),
        Map.entry(Checkpoint.RELEASED_FAILED, 1L));
  }

  @Test
  void itemQueryRefusesOutOfRangeValuesNamingThem() {
    assertThatThrownBy(() -> ItemQuery.all().withLimit(0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("limit").hasMessageContaining("0");
    assertThatThrownBy(() -> ItemQuery.all().withLimit(ItemQuery.MAX_LIMIT + 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(String.valueOf(ItemQuery.MAX_LIMIT + 1));
    assertThatThrownBy(() -> ItemQuery.all().withQueue(" "))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("queue");
    assertThatThrownBy(() -> ItemQuery.all().withOrder(null)).isInstanceOf(NullPointerException.class);
  }
}
