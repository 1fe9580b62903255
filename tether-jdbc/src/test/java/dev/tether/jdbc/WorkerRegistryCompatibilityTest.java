package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The fleet registry on every engine, aged by the store's (settable) clock. */
abstract class WorkerRegistryCompatibilityTest extends StoreTestBase {
  private static final Duration EVERY = Duration.ofSeconds(10);

  private static WorkerInfo.Registration reg(String id) {
    return new WorkerInfo.Registration(id, "host-" + id, 42, "1.2.3", List.of("a", "b"), 3, 3);
  }

  @Test
  void aRegisteredWorkerIsListedWithWhatItSaidAndTheStoreClock() {
    WorkerRegistry r = new WorkerRegistry(store);
    r.register(reg("w1"), EVERY);
    clock.advance(Duration.ofSeconds(4));
    assertThat(r.refresh("w1", 2)).isTrue();
    clock.advance(Duration.ofSeconds(1));
    WorkerInfo w = r.list().get(0);
    assertThat(w.workerId()).isEqualTo("w1");
    assertThat(w.host()).isEqualTo("host-w1");
    assertThat(w.pid()).isEqualTo(42);
    assertThat(w.version()).isEqualTo("1.2.3");
    assertThat(w.queues()).containsExactly("a", "b");
    assertThat(w.loops()).isEqualTo(3);
    assertThat(w.inFlight()).isEqualTo(2);
    assertThat(w.refreshInterval()).isEqualTo(EVERY);
    assertThat(w.startedAt()).isEqualTo(java.time.Instant.parse("2026-03-01T10:00:00Z"));
    assertThat(w.lastSeenAt()).isEqualTo(java.time.Instant.parse("2026-03-01T10:00:04Z"));
    assertThat(w.sinceSeen()).isEqualTo(Duration.ofSeconds(1));
    assertThat(w.gone()).isFalse();
  }

  @Test
  void inFlightIsTheLeasesItsLoopsHoldNowElseWhatItLastSaid() {
    WorkerRegistry r = new WorkerRegistry(store);
    r.register(reg("vm:7"), EVERY);
    r.register(reg("vm:70"), EVERY); // a prefix of the other's id, not one of its loops
    LeaseManager loop0 = new LeaseManager(store, "vm:7/w0");
    LeaseManager loop1 = new LeaseManager(store, "vm:7/w1");
    for (int i = 0; i < 3; i++) {
      loop0.enqueue(NewWorkItem.of("a", "x" + i));
    }
    // registered with 0 in flight, and no refresh since: the leases show at once
    loop0.acquire("a", Duration.ofMinutes(1)).orElseThrow();
    Lease second = loop1.acquire("a", Duration.ofMinutes(1)).orElseThrow();
    assertThat(r.list()).extracting(WorkerInfo::workerId, WorkerInfo::inFlight)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("vm:7", 2),
            org.assertj.core.groups.Tuple.tuple("vm:70", 0));
    loop1.complete(second.itemId(), second.token(), "done".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    assertThat(r.list().get(0).inFlight()).isEqualTo(1);
    // a worker whose loops lease under other names: what it said at its last refresh
    r.refresh("vm:70", 4);
    assertThat(r.list().get(1).inFlight()).isEqualTo(4);
  }

  @Test
  void aSilentWorkerIsGoneAfterThreeIntervalsAndPrunedAfterTheGivenTime() {
    WorkerRegistry r = new WorkerRegistry(store);
    r.register(reg("dead"), EVERY);
    r.register(reg("live"), EVERY);
    clock.advance(EVERY.multipliedBy(3));
    r.refresh("live", 0);
    assertThat(r.list()).extracting(WorkerInfo::gone).containsExactly(false, false);
    clock.advance(Duration.ofMillis(1));
    assertThat(r.list()).extracting(WorkerInfo::workerId, WorkerInfo::gone)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("live", false),
            org.assertj.core.groups.Tuple.tuple("dead", true));
    assertThat(r.prune(Duration.ofMinutes(10))).isZero();
    clock.advance(Duration.ofMinutes(10));
    r.refresh("live", 0);
    assertThat(r.prune(Duration.ofMinutes(10))).isEqualTo(1);
    assertThat(r.list()).extracting(WorkerInfo::workerId).containsExactly("live");
  }

  @Test
  void aDeletedWorkerReRegistersOnItsNextRefreshAndDeregistersOnClose() {
    WorkerRegistry r = new WorkerRegistry(store);
    WorkerRegistration running = WorkerRegistration.start(r, reg("w"), Duration.ofHours(1), () -> 5);
    try {
      assertThat(r.list()).extracting(WorkerInfo::workerId).containsExactly("w");
      assertThat(r.deregister("w")).isTrue();
      assertThat(r.refresh("w", 1)).isFalse();
      running.refreshOnce();
      assertThat(r.list()).extracting(WorkerInfo::inFlight).containsExactly(0);
      running.refreshOnce();
      assertThat(r.list()).extracting(WorkerInfo::inFlight).containsExactly(5);
    } finally {
      running.close();
    }
    assertThat(r.list()).isEmpty();
  }

  @Test
  void refreshesPruneWorkersSilentForSixtyIntervals() {
    WorkerRegistry r = new WorkerRegistry(store);
    r.register(reg("old"), EVERY);
    clock.advance(EVERY.multipliedBy(WorkerRegistry.DELETE_AFTER_REFRESHES).plusSeconds(1));
    WorkerRegistration running = WorkerRegistration.start(r, reg("new"), EVERY, () -> 0);
    try {
      for (int i = 0; i < WorkerRegistration.PRUNE_EVERY - 1; i++) {
        running.refreshOnce();
      }
      assertThat(r.list()).extracting(WorkerInfo::workerId).containsExactly("new", "old");
      running.refreshOnce();
      assertThat(r.list()).extracting(WorkerInfo::workerId).containsExactly("new");
    } finally {
      running.close();
    }
  }
}
