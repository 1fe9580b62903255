package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** HeartbeatThread on every engine (subclass per engine). */
abstract class HeartbeatThreadCompatibilityTest extends StoreTestBase {
  static final Duration LEASE = Duration.ofSeconds(10);
  static final Duration INTERVAL = Duration.ofMillis(20);

  @Test
  void renewsTheLeaseOnItsOwnNamedThreadUntilStopped() {
    LeaseManager w = new LeaseManager(store, "w");
    long id = w.enqueue(NewWorkItem.of("q", "x"));
    Lease l = w.acquire("q", LEASE).orElseThrow();
    HeartbeatThread hb = new HeartbeatThread(w, l, INTERVAL, LEASE, 3, null);
    hb.start();
    try {
      assertThat(Thread.getAllStackTraces().keySet()).anyMatch(t -> t.getName().equals("tether-lease-renewal-" + id));
      assertThat(hb.isRunning()).isTrue();
      clock.advance(Duration.ofSeconds(8));
      Instant afterAdvance = clock.instant();
      await().atMost(Duration.ofSeconds(5)).until(() -> afterAdvance.equals(w.find(id).orElseThrow().heartbeatAt()));
      clock.advance(Duration.ofSeconds(8)); // past the original expiry
      assertThat(new LeaseManager(store, "other").acquire("q", LEASE)).as("still leased").isEmpty();
    } finally {
      hb.stop();
      hb.stop();
    }
    assertThat(hb.isRunning()).isFalse();
    assertThat(hb.isLeaseLost()).isFalse();
    w.complete(id, l.token(), null);
  }

  @Test
  void onLeaseLostFiresAtOnceOnTakeoverNotAfterRetries() {
    LeaseManager w = new LeaseManager(store, "w");
    long id = w.enqueue(NewWorkItem.of("q", "x"));
    Lease l = w.acquire("q", LEASE).orElseThrow();
    clock.advance(LEASE.plusSeconds(1));
    new LeaseManager(store, "thief").acquire("q", LEASE).orElseThrow();
    AtomicInteger calls = new AtomicInteger();
    HeartbeatThread hb = new HeartbeatThread(w, l, INTERVAL, LEASE, 5, calls::incrementAndGet);
    hb.start();
    await().atMost(Duration.ofSeconds(5)).until(() -> calls.get() == 1);
    await().atMost(Duration.ofSeconds(5)).until(() -> !hb.isRunning());
    assertThat(hb.isLeaseLost()).isTrue();
    assertThat(hb.consecutiveFailures()).as("no retries before reporting").isZero();
    assertThat(calls.get()).isEqualTo(1);
    assertThat(w.find(id).orElseThrow().leaseHolder()).isEqualTo("thief");
  }

  @Test
  void givesUpAfterMaxConsecutiveFailuresWhenTheDatabaseIsUnreachable() {
    java.util.concurrent.atomic.AtomicBoolean down = new java.util.concurrent.atomic.AtomicBoolean();
    try (TetherStore flaky = TetherStore.open(
        new JdbcMailboxCompatibilityTest.SwitchableDataSource(store.dataSource(), down),
        TetherStoreConfig.builder().clock(clock).build())) {
      LeaseManager w = new LeaseManager(flaky, "w");
      w.enqueue(NewWorkItem.of("q", "x"));
      Lease l = w.acquire("q", LEASE).orElseThrow();
      AtomicInteger calls = new AtomicInteger();
      HeartbeatThread hb = new HeartbeatThread(w, l, INTERVAL, LEASE, 3, calls::incrementAndGet);
      down.set(true);
      hb.start();
      await().atMost(Duration.ofSeconds(5)).until(() -> calls.get() == 1);
      await().atMost(Duration.ofSeconds(5)).until(() -> !hb.isRunning());
      assertThat(hb.consecutiveFailures()).isEqualTo(3);
      assertThat(hb.renewals()).isZero();
    }
  }

  @Test
  void rejectsAnIntervalThatIsNotWellBelowTheLease() {
    LeaseManager w = new LeaseManager(store, "w");
    w.enqueue(NewWorkItem.of("q", "x"));
    Lease l = w.acquire("q", LEASE).orElseThrow();
    assertThatThrownBy(() -> new HeartbeatThread(w, l, Duration.ofSeconds(5), LEASE, 3, null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("half");
    assertThatThrownBy(() -> new HeartbeatThread(w, l, INTERVAL, LEASE, 0, null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxFailures");
  }
}
