package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tether.mailbox.Message;
import dev.tether.mailbox.MessageCancelledException;
import dev.tether.mailbox.ReceiptHandleExpiredException;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** QueueAdmin's cancel and purge on every engine (subclass per engine). */
abstract class QueueAdminCompatibilityTest extends StoreTestBase {
  static final Duration LEASE = Duration.ofMinutes(5);

  @Test
  void cancellingAPendingItemEndsItCancelledWithTheReasonAndACheckpointStampedByTheStoreClock() {
    LeaseManager w = new LeaseManager(store, "w");
    long id = w.enqueue(NewWorkItem.of("q", "job"));
    clock.advance(Duration.ofSeconds(7));
    Instant at = clock.instant();

    assertThat(new QueueAdmin(store).cancel(id, "not needed any more")).isTrue();

    WorkItem item = w.find(id).orElseThrow();
    assertThat(item.status()).isEqualTo(WorkStatus.CANCELLED);
    assertThat(item.errorMessage()).isEqualTo("not needed any more");
    assertThat(item.completedAt()).isEqualTo(at);
    assertThat(item.updatedAt()).isEqualTo(at);
    assertThat(item.leaseToken()).isNull();
    assertThat(item.deliveryCount()).isZero();
    assertThat(item.checkpoints()).singleElement().satisfies(cp -> {
      assertThat(cp.kind()).isEqualTo(Checkpoint.CANCELLED);
      assertThat(cp.reason()).isEqualTo("not needed any more");
      assertThat(cp.createdAt()).isEqualTo(at);
      assertThat(cp.leaseToken()).isNull();
      assertThat(cp.deliveryCount()).isZero();
    });
    assertThat(w.acquire("q", LEASE)).as("a cancelled item is never delivered").isEmpty();
  }

  @Test
  void cancellingALeasedItemRefusesTheHoldersLaterRenewCompleteReleaseAndHandBack() {
    LeaseManager w = new LeaseManager(store, "worker-a");
    long id = w.enqueue(NewWorkItem.of("q", "job"));
    Lease lease = w.acquire("q", LEASE).orElseThrow();
    clock.advance(Duration.ofSeconds(30));
    w.renew(id, lease.token(), LEASE);
    clock.advance(Duration.ofSeconds(5));

    assertThat(new QueueAdmin(store).cancel(id, "cancelled by operator")).isTrue();

    assertThatThrownBy(() -> w.renew(id, lease.token(), LEASE))
        .isInstanceOf(ItemCancelledException.class)
        .hasMessageContaining(String.valueOf(id))
        .hasMessageContaining("cancelled");
    assertThat(w.checkLease(id, lease.token())).isEqualTo(dev.tether.mailbox.LeaseStatus.CANCELLED);
    assertThatThrownBy(() -> w.checkpoint(id, lease.token(), new byte[] {1}))
        .isInstanceOf(ItemCancelledException.class);
    assertThatThrownBy(() -> w.complete(id, lease.token(), null))
        .isInstanceOf(ItemCancelledException.class);
    assertThatThrownBy(() -> w.release(id, lease.token(), true, "late output", null))
        .isInstanceOf(ItemCancelledException.class);
    assertThatThrownBy(() -> w.release(id, lease.token(), false, null, "late failure"))
        .isInstanceOf(ItemCancelledException.class);
    assertThatThrownBy(() -> w.handBack(id, lease.token(), Duration.ZERO))
        .isInstanceOf(ItemCancelledException.class);

    WorkItem item = w.find(id).orElseThrow();
    assertThat(item.status()).isEqualTo(WorkStatus.CANCELLED);
    assertThat(item.errorMessage()).isEqualTo("cancelled by operator");
    assertThat(item.output()).isNull();
    assertThat(item.leaseExpiresAt()).isNull();
    assertThat(item.checkpoints()).singleElement().satisfies(cp -> {
      assertThat(cp.kind()).isEqualTo(Checkpoint.CANCELLED);
      assertThat(cp.leaseHolder()).isEqualTo("worker-a");
      assertThat(cp.leaseToken()).isEqualTo(lease.token());
      assertThat(cp.deliveryCount()).isEqualTo(1);
      assertThat(cp.lastHeartbeat()).isEqualTo(clock.instant().minusSeconds(5));
    });
  }

  @Test
  void cancellingAnUnknownCompletedOrFailedItemChangesNothing() {
    LeaseManager w = new LeaseManager(store, "w");
    long done = w.enqueue(NewWorkItem.of("q", "done"));
    Lease l = w.acquire("q", LEASE).orElseThrow();
    w.complete(done, l.token(), null);
    long dead = w.enqueue(NewWorkItem.builder("q").maxAttempts(1).build());
    Lease d = w.acquire("q", LEASE).orElseThrow();
    w.release(dead, d.token(), false, null, "boom");
    WorkItem doneBefore = w.find(done).orElseThrow();
    WorkItem deadBefore = w.find(dead).orElseThrow();
    clock.advance(Duration.ofSeconds(1));

    QueueAdmin admin = new QueueAdmin(store);
    assertThat(admin.cancel(done, "too late")).isFalse();
    assertThat(admin.cancel(dead, "too late")).isFalse();
    assertThat(admin.cancel(987_654L, "no such item")).isFalse();

    WorkItem doneAfter = w.find(done).orElseThrow();
    WorkItem deadAfter = w.find(dead).orElseThrow();
    assertThat(doneAfter.status()).isEqualTo(WorkStatus.COMPLETED);
    assertThat(doneAfter.updatedAt()).isEqualTo(doneBefore.updatedAt());
    assertThat(doneAfter.checkpoints()).isEmpty();
    assertThat(deadAfter.errorMessage()).isEqualTo("failed on attempt 1 of 1: boom");
    assertThat(deadAfter.updatedAt()).isEqualTo(deadBefore.updatedAt());
    assertThat(deadAfter.checkpoints()).extracting(Checkpoint::kind).containsExactly(Checkpoint.RELEASED_FAILED);
  }

  @Test
  void aCancelledItemCanBeRedrivenAndTheOldTokenStaysRefused() {
    LeaseManager w = new LeaseManager(store, "w");
    long id = w.enqueue(NewWorkItem.of("q", "job"));
    Lease first = w.acquire("q", LEASE).orElseThrow();
    assertThat(new QueueAdmin(store).cancel(id, "cancelled")).isTrue();
    assertThat(w.redrive(id)).isTrue();
    Lease second = w.acquire("q", LEASE).orElseThrow();
    assertThat(second.deliveryCount()).isEqualTo(2);

    assertThatThrownBy(() -> w.complete(id, first.token(), null)).isInstanceOf(LeaseConflictException.class);
    w.complete(id, second.token(), null);
    assertThat(w.find(id).orElseThrow().checkpoints()).extracting(Checkpoint::kind)
        .containsExactly(Checkpoint.CANCELLED, Checkpoint.REDRIVEN);
  }

  @Test
  void cancelRacingTheHoldersCompletionHasExactlyOneWinner() throws Exception {
    LeaseManager w = new LeaseManager(store, "w");
    QueueAdmin admin = new QueueAdmin(store);
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      for (int round = 0; round < 15; round++) {
        String queue = "race-" + round;
        long id = w.enqueue(NewWorkItem.of(queue, "x"));
        Lease lease = w.acquire(queue, LEASE).orElseThrow();
        CountDownLatch go = new CountDownLatch(1);
        Callable<Boolean> cancel = () -> { go.await(); return admin.cancel(id, "cancelled"); };
        Callable<Boolean> complete = () -> {
          go.await();
          w.complete(id, lease.token(), null);
          return true;
        };
        Future<Boolean> fc = pool.submit(cancel);
        Future<Boolean> fd = pool.submit(complete);
        go.countDown();
        boolean cancelled = fc.get();
        boolean completed;
        try {
          completed = fd.get();
        } catch (ExecutionException e) {
          assertThat(e.getCause()).isInstanceOf(ItemCancelledException.class);
          completed = false;
        }
        assertThat(cancelled ^ completed).as("exactly one of cancel and complete wins, round " + round).isTrue();
        WorkItem item = w.find(id).orElseThrow();
        assertThat(item.status()).isEqualTo(cancelled ? WorkStatus.CANCELLED : WorkStatus.COMPLETED);
        assertThat(item.checkpoints()).hasSize(cancelled ? 1 : 0);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void cancelNeedsAReason() {
    QueueAdmin admin = new QueueAdmin(store);
    assertThatThrownBy(() -> admin.cancel(1, " "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("reason");
    assertThatThrownBy(() -> admin.cancel(1, null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void purgeCompletedDeletesOnlyItemsCompletedBeforeTheCutoffWithTheirCheckpoints() {
    LeaseManager w = new LeaseManager(store, "w",
        LeaseManagerConfig.defaults().withRetryBackoff(Duration.ofMillis(1), Duration.ofMillis(1)));
    // completed on the second delivery: has a released_failed checkpoint
    long oldDone = w.enqueue(NewWorkItem.builder("q").maxAttempts(2).build());
    Lease a1 = w.acquire("q", LEASE).orElseThrow();
    w.release(oldDone, a1.token(), false, null, "flaky");
    clock.advance(Duration.ofMillis(1));
    Lease a2 = w.acquire("q", LEASE).orElseThrow();
    w.complete(oldDone, a2.token(), null);
    long oldFailed = w.enqueue(NewWorkItem.builder("q").maxAttempts(1).build());
    Lease f = w.acquire("q", LEASE).orElseThrow();
    w.release(oldFailed, f.token(), false, null, "boom");
    Instant cutoff = clock.advance(Duration.ofHours(1)).instant();
    long recentDone = w.enqueue(NewWorkItem.of("q", "recent"));
    Lease r = w.acquire("q", LEASE).orElseThrow();
    w.complete(recentDone, r.token(), null);
    long pending = w.enqueue(NewWorkItem.of("q", "waiting"));

    assertThat(new QueueAdmin(store).purgeCompleted(cutoff)).isEqualTo(1);

    assertThat(w.find(oldDone)).isEmpty();
    assertThat(w.find(oldFailed)).get().extracting(WorkItem::status).isEqualTo(WorkStatus.FAILED);
    assertThat(w.find(recentDone)).get().extracting(WorkItem::status).isEqualTo(WorkStatus.COMPLETED);
    assertThat(w.find(pending)).isPresent();
    assertThat(new QueueMonitor(store).countsByCheckpointKind())
        .as("the purged item's checkpoint is gone, the failed item's stays")
        .containsExactlyEntriesOf(Map.of(Checkpoint.RELEASED_FAILED, 1L));
    assertThat(new QueueAdmin(store).purgeCompleted(cutoff)).isZero();
  }

  @Test
  void purgeCompletedOlderThanMeasuresAgeByTheStoreClockAndZeroDeletesEveryCompletedItem() {
    LeaseManager w = new LeaseManager(store, "w");
    long old = w.enqueue(NewWorkItem.of("q", "old"));
    Lease l1 = w.acquire("q", LEASE).orElseThrow();
    w.complete(old, l1.token(), null);
    clock.advance(Duration.ofMinutes(10));
    long young = w.enqueue(NewWorkItem.of("q", "young"));
    Lease l2 = w.acquire("q", LEASE).orElseThrow();
    w.complete(young, l2.token(), null);
    QueueAdmin admin = new QueueAdmin(store);

    assertThat(admin.purgeCompletedOlderThan(Duration.ofMinutes(10).plusMillis(1))).isZero();
    assertThat(admin.purgeCompletedOlderThan(Duration.ofMinutes(10))).as("exactly 10 min old counts").isEqualTo(1);
    assertThat(w.find(old)).isEmpty();
    assertThat(admin.purgeCompletedOlderThan(Duration.ZERO)).isEqualTo(1);
    assertThat(w.find(young)).isEmpty();
    assertThatThrownBy(() -> admin.purgeCompletedOlderThan(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("PT-1S");
  }

  @Test
  void aMailboxMessageWhoseItemWasCancelledIsRefusedOnExtendAcknowledgeAndNack() {
    JdbcMailbox<String, String> mailbox = JdbcMailbox.ofStrings(store, "q");
    String id = mailbox.send("job");
    Message<String, String> msg = mailbox.receive(1, LEASE, Duration.ZERO).get(0);

    assertThat(new QueueAdmin(store).cancel(Long.parseLong(id), "cancelled by operator")).isTrue();

    assertThatThrownBy(() -> msg.extendVisibility(LEASE)).isInstanceOf(MessageCancelledException.class);
    assertThatThrownBy(msg::acknowledge).isInstanceOf(MessageCancelledException.class);
    assertThatThrownBy(() -> msg.nack(Duration.ZERO)).isInstanceOf(MessageCancelledException.class);
    assertThatThrownBy(() -> msg.checkpoint(new byte[] {1})).isInstanceOf(MessageCancelledException.class);
    assertThat(msg.checkLease()).isEqualTo(dev.tether.mailbox.LeaseStatus.CANCELLED);
    assertThat(mailbox.receive(1, LEASE, Duration.ZERO)).isEmpty();
    WorkItem item = new QueueMonitor(store).item(Long.parseLong(id)).orElseThrow();
    assertThat(item.status()).isEqualTo(WorkStatus.CANCELLED);
    assertThat(item.errorMessage()).isEqualTo("cancelled by operator");
  }
}
