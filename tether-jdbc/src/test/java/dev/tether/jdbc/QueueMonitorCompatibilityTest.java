package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
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
  void handBackMakesTheItemAvailableAfterTheDelayWithoutCountingAFailure() {
    LeaseManager w = new LeaseManager(store, "w");
    long id = w.enqueue(NewWorkItem.builder("q").maxAttempts(1).build());
    Lease l = w.acquire("q", LEASE).orElseThrow();
    w.handBack(id, l.token(), Duration.ofSeconds(10));
    assertThat(w.acquire("q", LEASE)).isEmpty();
    clock.advance(Duration.ofSeconds(10));
    Lease again = w.acquire("q", LEASE).orElseThrow();
    assertThat(again.deliveryCount()).isEqualTo(2);
    assertThat(w.find(id).orElseThrow().checkpoints()).extracting(Checkpoint::kind).containsExactly(Checkpoint.NACKED);
  }
}
