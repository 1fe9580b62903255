package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** LeaseManager behaviour every engine must show (subclass per engine). */
abstract class LeaseManagerCompatibilityTest extends StoreTestBase {
  static final Duration LEASE = Duration.ofSeconds(30);

  LeaseManager worker(String id) {
    return new LeaseManager(store, id);
  }

  @Test
  void aPendingItemCancelledAfterAHandBackKeepsItsOutputWithTheHandBackOnly() {
    LeaseManager a = worker("worker-a");
    long id = a.enqueue(NewWorkItem.of("q", "job"));
    Lease lease = a.acquire("q", LEASE).orElseThrow();
    a.handBack(id, lease.token(), Duration.ofMinutes(5),
        new dev.tether.mailbox.OutputTail("out of delivery 1", "", 17, Duration.ZERO, Duration.ZERO));
    assertThat(new QueueAdmin(store).cancel(id, "not needed")).isTrue();
    WorkItem item = a.find(id).orElseThrow();
    assertThat(item.checkpoints()).extracting(Checkpoint::kind)
        .containsExactly(Checkpoint.HANDED_BACK, Checkpoint.CANCELLED);
    assertThat(item.checkpoints().get(0).stdoutTail()).isEqualTo("out of delivery 1");
    assertThat(item.checkpoints().get(1).stdoutTail()).as("the cancellation ends no delivery").isNull();
  }

  @Test
  void aStatementInsideAWriteTransactionIsNotCommittedOnItsOwn() {
    // the diagnosis of a group's refused members relies on it: inside a transaction a failed
    // read must fail the whole (SQLite's connections stay in auto-commit mode inside BEGIN
    // IMMEDIATE, so the connection's flag cannot say it)
    assertThat((boolean) store.write("probing", c -> store.storeEngine().committedAlone(c))).isFalse();
  }

  @Test
  void twoWorkersOneItemExactlyOneAcquires() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      for (int round = 0; round < 20; round++) {
        LeaseManager a = worker("a");
        LeaseManager b = worker("b");
        long id = a.enqueue(NewWorkItem.of("race-" + round, "x"));
        CountDownLatch go = new CountDownLatch(1);
        String queue = "race-" + round;
        Callable<Optional<Lease>> ta = () -> { go.await(); return a.acquire(queue, LEASE); };
        Callable<Optional<Lease>> tb = () -> { go.await(); return b.acquire(queue, LEASE); };
        Future<Optional<Lease>> fa = pool.submit(ta);
        Future<Optional<Lease>> fb = pool.submit(tb);
        go.countDown();
        Optional<Lease> la = fa.get();
        Optional<Lease> lb = fb.get();
        assertThat(la.isPresent() ^ lb.isPresent()).as("exactly one of the two acquires, round " + round).isTrue();
        Lease won = la.orElseGet(lb::get);
        assertThat(won.itemId()).isEqualTo(id);
        assertThat(won.deliveryCount()).isEqualTo(1);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void workBeatsAreRecordedByBeatsAndCheckpointsNotByRenewalsAndAreFencedByTheToken() {
    LeaseManager a = worker("worker-a");
    LeaseManager b = worker("worker-b");
    long id = a.enqueue(NewWorkItem.of("beats", "job"));
    Lease la = a.acquire("beats", LEASE).orElseThrow();
    assertThat(a.inspectLease(id, la.token()).workBeatAt()).isNull();

    clock.advance(Duration.ofSeconds(1));
    a.renew(id, la.token(), LEASE);
    assertThat(a.inspectLease(id, la.token()).workBeatAt()).as("an extension is not a work beat").isNull();

    java.time.Instant expiry = a.find(id).orElseThrow().leaseExpiresAt();
    clock.advance(Duration.ofSeconds(1));
    b.beat(id, la.token()); // any process with the token: a delegated process
    LeaseCheck afterBeat = a.inspectLease(id, la.token());
    assertThat(afterBeat.status()).isEqualTo(dev.tether.mailbox.LeaseStatus.HELD);
    assertThat(afterBeat.workBeatAt()).isNotNull();
    assertThat(a.find(id).orElseThrow().leaseExpiresAt()).as("a beat does not extend").isEqualTo(expiry);

    clock.advance(Duration.ofSeconds(1));
    b.checkpoint(id, la.token(), "step 1".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    assertThat(a.inspectLease(id, la.token()).workBeatAt()).isAfter(afterBeat.workBeatAt());

    clock.advance(LEASE.plusSeconds(1));
    Lease lb = b.acquire("beats", LEASE).orElseThrow();
    assertThatThrownBy(() -> a.beat(id, la.token())).isInstanceOf(LeaseConflictException.class);
    assertThat(a.inspectLease(id, la.token()).status()).isEqualTo(dev.tether.mailbox.LeaseStatus.LOST);
    assertThat(new QueueAdmin(store).cancel(id, "stop")).isTrue();
    assertThatThrownBy(() -> b.beat(id, lb.token())).isInstanceOf(ItemCancelledException.class);
    assertThat(b.inspectLease(id, lb.token()).status()).isEqualTo(dev.tether.mailbox.LeaseStatus.CANCELLED);
  }

  @Test
  void aDeliveryStartingFromAnEarlierDeliverysCheckpointIsAuditedOnceAndAFreshStartIsNot() {
    LeaseManager a = worker("worker-a");
    LeaseManager b = worker("worker-b");
    long id = a.enqueue(NewWorkItem.of("resume", "job"));
    Lease first = a.acquire("resume", LEASE).orElseThrow();
    assertThat(first.progress()).isNull();
    a.checkpoint(id, first.token(), "3".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    a.handBack(id, first.token(), Duration.ZERO);
    Lease second = b.acquire("resume", LEASE).orElseThrow();
    assertThat(second.progress()).asString(java.nio.charset.StandardCharsets.UTF_8).isEqualTo("3");
    b.renew(id, second.token(), LEASE);
    WorkItem item = b.find(id).orElseThrow();
    assertThat(item.checkpoints()).extracting(Checkpoint::kind)
        .containsExactly(Checkpoint.HANDED_BACK, Checkpoint.PROGRESS_TAKEN_OVER);
    assertThat(item.checkpoints().get(0).reason())
        .isEqualTo("handed back by its worker, attempt 1 of 3 not charged; visible again at once");
    Checkpoint takeover = item.checkpoints().get(1);
    assertThat(takeover.deliveryCount()).isEqualTo(2);
    assertThat(takeover.leaseHolder()).isEqualTo("worker-b");
    assertThat(takeover.leaseToken()).isEqualTo(second.token());
    assertThat(takeover.reason()).isEqualTo("delivery 2 starts from the progress checkpoint written by"
        + " delivery 1 at " + item.progressAt());
    // the takeover starts delivery 2, it does not end it: delivery 1 ended handed back, 2 runs on
    assertThat(takeover.endsDelivery()).isFalse();
    assertThat(item.endOfDelivery(1)).map(Checkpoint::kind).contains(Checkpoint.HANDED_BACK);
    assertThat(item.endOfDelivery(2)).isEmpty();
  }

  @Test
  void deliveriesTellHowEachEndedAndTheCurrentOneHasNoReasonUntilItEnds() {
    LeaseManager a = worker("worker-a");
    LeaseManager b = worker("worker-b");
    long id = a.enqueue(NewWorkItem.of("deliveries", "job"));
    Lease first = a.acquire("deliveries", LEASE).orElseThrow();
    a.nack(id, first.token(), Duration.ZERO, "boom",
        new dev.tether.mailbox.OutputTail("out-1", "err-1", 10, null, null));
    Lease second = b.acquire("deliveries", LEASE).orElseThrow();
    b.renew(id, second.token(), LEASE,
        new dev.tether.mailbox.OutputTail("out-2", "err-2", 10, Duration.ZERO, null));

    WorkItem running = b.find(id).orElseThrow();
    assertThat(running.errorMessage()).isEqualTo("boom"); // delivery 1's
    List<Delivery> ds = running.deliveries();
    assertThat(ds).extracting(Delivery::number).containsExactly(1, 2);
    assertThat(ds.get(0)).extracting(Delivery::outcome, Delivery::holder, Delivery::stdoutTail,
            Delivery::stderrTail)
        .containsExactly(Checkpoint.RELEASED_FAILED, "worker-a", "out-1", "err-1");
    assertThat(ds.get(0).reason()).startsWith("boom (attempt 1 of 3");
    assertThat(ds.get(1)).extracting(Delivery::outcome, Delivery::holder, Delivery::reason,
            Delivery::stdoutTail, Delivery::stderrTail)
        .containsExactly("in_progress", "worker-b", null, "out-2", "err-2");
    assertThat(ds.get(1).at()).isEqualTo(running.updatedAt());

    clock.advance(LEASE.plusSeconds(1));
    Lease third = a.acquire("deliveries", LEASE).orElseThrow();
    a.release(id, third.token(), false, null, "bad input");
    WorkItem failed = a.find(id).orElseThrow();
    assertThat(failed.deliveries()).extracting(Delivery::outcome).containsExactly(
        Checkpoint.RELEASED_FAILED, Checkpoint.LEASE_EXPIRED, Checkpoint.RELEASED_FAILED);
    assertThat(failed.deliveries().get(2).reason()).startsWith("bad input");

    // a listing leaves the audit trail out: the earlier deliveries are unknown
    WorkItem listed = new QueueMonitor(store).items(ItemQuery.all().withQueue("deliveries")).get(0);
    assertThat(listed.deliveries()).extracting(Delivery::isUnknown).containsExactly(true, true, false);
    assertThat(listed.deliveries().get(0))
        .isEqualTo(new Delivery(1, Delivery.UNKNOWN, null, null, null, null, null));
  }

  @Test
  void staleWorkersRenewAckAndReleaseAreRefusedAfterTakeover() {
    LeaseManager a = worker("worker-a");
    LeaseManager b = worker("worker-b");
    long id = a.enqueue(NewWorkItem.of("q", "job"));
    Lease la = a.acquire("q", LEASE).orElseThrow();
    clock.advance(LEASE.plusSeconds(1));
    Lease lb = b.acquire("q", LEASE).orElseThrow();
    assertThat(lb.itemId()).isEqualTo(id);
    assertThat(lb.token()).isNotEqualTo(la.token());
    assertThat(lb.deliveryCount()).isEqualTo(2);

    assertThatThrownBy(() -> a.renew(id, la.token(), LEASE))
        .isInstanceOf(LeaseConflictException.class)
        .hasMessageContaining("worker-b")
        .hasMessageContaining(String.valueOf(id));
    assertThatThrownBy(() -> a.release(id, la.token(), true, "stale", null))
        .isInstanceOf(LeaseConflictException.class);
    assertThatThrownBy(() -> a.release(id, la.token(), false, null, "boom"))
        .isInstanceOf(LeaseConflictException.class);

    WorkItem item = a.find(id).orElseThrow();
    assertThat(item.status()).isEqualTo(WorkStatus.IN_PROGRESS);
    assertThat(item.leaseHolder()).isEqualTo("worker-b");
    assertThat(item.leaseToken()).isEqualTo(lb.token());
    assertThat(item.checkpoints()).extracting(Checkpoint::kind).containsExactly(Checkpoint.LEASE_EXPIRED);
    assertThat(item.checkpoints().get(0).leaseHolder()).isEqualTo("worker-a");
    assertThat(item.checkpoints().get(0).leaseToken()).isEqualTo(la.token());

    b.release(id, lb.token(), true, "done", null);
    assertThat(a.find(id).orElseThrow().outputAsString()).isEqualTo("done");
  }

  @Test
  void renewAfterTheSweepReclaimedTheItemIsRefusedAsExpired() {
    LeaseManager a = worker("a");
    long id = a.enqueue(NewWorkItem.of("q", "job"));
    Lease l = a.acquire("q", LEASE).orElseThrow();
    clock.advance(LEASE.plusMillis(1));
    new RecoverySweep(store).scanAndRecover();
    assertThatThrownBy(() -> a.renew(id, l.token(), LEASE))
        .isInstanceOf(LeaseExpiredException.class)
        .hasMessageContaining("pending");
    assertThatThrownBy(() -> a.complete(id, l.token(), null)).isInstanceOf(LeaseExpiredException.class);
  }

  @Test
  void expiredButNotTakenOverLeaseCanStillBeRenewedAndCompleted() {
    LeaseManager a = worker("a");
    long id = a.enqueue(NewWorkItem.of("q", "job"));
    Lease l = a.acquire("q", LEASE).orElseThrow();
    clock.advance(LEASE.plusSeconds(5));
    assertThat(a.renew(id, l.token(), LEASE)).isEqualTo(clock.instant().plus(LEASE));
    a.complete(id, l.token(), null);
    assertThat(a.find(id).orElseThrow().status()).isEqualTo(WorkStatus.COMPLETED);
  }

  @Test
  void renewNeverShortensALease() {
    LeaseManager a = worker("a");
    long id = a.enqueue(NewWorkItem.of("q", "job"));
    Lease l = a.acquire("q", Duration.ofMinutes(30)).orElseThrow();
    clock.advance(Duration.ofSeconds(10));
    assertThat(a.renew(id, l.token(), Duration.ofMinutes(5))).isEqualTo(l.expiresAt());
    assertThat(a.renew(id, l.token(), Duration.ofMinutes(40)))
        .isEqualTo(clock.instant().plus(Duration.ofMinutes(40)));
    assertThat(a.find(id).orElseThrow().heartbeatAt()).isEqualTo(clock.instant());
  }

  @Test
  void expiredLeaseIsRedeliveredWithHigherDeliveryCountAndOneCheckpoint() {
    LeaseManager a = worker("a");
    long id = a.enqueue(NewWorkItem.of("q", "job"));
    Lease first = a.acquire("q", LEASE).orElseThrow();
    assertThat(a.acquire("q", LEASE)).as("leased item is invisible").isEmpty();
    clock.advance(LEASE);
    Lease second = a.acquire("q", LEASE).orElseThrow();
    assertThat(second.itemId()).isEqualTo(id);
    assertThat(second.deliveryCount()).isEqualTo(first.deliveryCount() + 1);
    assertThat(a.find(id).orElseThrow().checkpoints()).hasSize(1);
  }

  @Test
  void poisonItemThatKillsItsWorkerEveryTimeEndsFailedAfterMaxAttempts() {
    LeaseManager a = worker("a");
    long id = a.enqueue(NewWorkItem.builder("q").input("poison").maxAttempts(3).build());
    for (int delivery = 1; delivery <= 3; delivery++) {
      Lease l = a.acquire("q", LEASE).orElseThrow();
      assertThat(l.deliveryCount()).isEqualTo(delivery);
      clock.advance(LEASE.plusSeconds(1)); // the worker dies: no renew, no release
    }
    assertThat(a.acquire("q", LEASE)).as("no fourth delivery").isEmpty();
    WorkItem item = a.find(id).orElseThrow();
    assertThat(item.status()).isEqualTo(WorkStatus.FAILED);
    assertThat(item.deliveryCount()).isEqualTo(3);
    assertThat(item.errorMessage()).contains("attempt 3 of 3").contains("no attempts left");
    assertThat(item.attempts()).isEqualTo(3);
    assertThat(item.checkpoints()).hasSize(3).allMatch(c -> c.kind().equals(Checkpoint.LEASE_EXPIRED));
  }

  @Test
  void failedReleaseRetriesWithBackoffUntilMaxAttemptsThenFails() {
    LeaseManager a = new LeaseManager(store, "a",
        LeaseManagerConfig.defaults().withRetryBackoff(Duration.ofSeconds(10), Duration.ofMinutes(1)));
    long id = a.enqueue(NewWorkItem.builder("q").input("x").maxAttempts(2).build());
    Lease l1 = a.acquire("q", LEASE).orElseThrow();
    assertThat(a.release(id, l1.token(), false, null, "first failure")).isEqualTo(ReleaseOutcome.RETRY_SCHEDULED);
    assertThat(a.acquire("q", LEASE)).as("not before the backoff").isEmpty();
    clock.advance(Duration.ofSeconds(10));
    Lease l2 = a.acquire("q", LEASE).orElseThrow();
    assertThat(l2.deliveryCount()).isEqualTo(2);
    assertThat(a.release(id, l2.token(), false, null, "second failure")).isEqualTo(ReleaseOutcome.FAILED);
    WorkItem item = a.find(id).orElseThrow();
    assertThat(item.status()).isEqualTo(WorkStatus.FAILED);
    assertThat(item.errorMessage()).isEqualTo("failed on attempt 2 of 2: second failure");
    assertThat(item.checkpoints()).extracting(Checkpoint::kind)
        .containsExactly(Checkpoint.RELEASED_FAILED, Checkpoint.RELEASED_FAILED);
    assertThatThrownBy(() -> a.release(id, l2.token(), true, null, null)).isInstanceOf(ItemFinalizedException.class);
  }

  @Test
  void maxAttemptsOfOneAllowsExactlyOneDelivery() {
    LeaseManager a = worker("a");
    long id = a.enqueue(NewWorkItem.builder("q").maxAttempts(1).build());
    Lease l = a.acquire("q", LEASE).orElseThrow();
    assertThat(a.release(id, l.token(), false, null, "boom")).isEqualTo(ReleaseOutcome.FAILED);
  }

  @Test
  void secondCompletionThroughTheSameLeaseIsRefusedAsFinalized() {
    LeaseManager a = worker("a");
    long id = a.enqueue(NewWorkItem.of("q", "x"));
    Lease l = a.acquire("q", LEASE).orElseThrow();
    a.complete(id, l.token(), null);
    assertThatThrownBy(() -> a.complete(id, l.token(), null)).isInstanceOf(ItemFinalizedException.class);
    assertThatThrownBy(() -> a.renew(id, l.token(), LEASE)).isInstanceOf(ItemFinalizedException.class);
  }

  @Test
  void idempotencyKeyReturnsTheExistingItem() {
    LeaseManager a = worker("a");
    long first = a.enqueue(NewWorkItem.builder("q").input("one").idempotencyKey("k-1").build());
    long again = a.enqueue(NewWorkItem.builder("q").input("two").idempotencyKey("k-1").build());
    long otherQueue = a.enqueue(NewWorkItem.builder("q2").input("three").idempotencyKey("k-1").build());
    assertThat(again).isEqualTo(first);
    assertThat(otherQueue).isNotEqualTo(first);
    assertThat(a.find(first).orElseThrow().inputAsString()).isEqualTo("one");
    assertThat(new QueueMonitor(store).countsByStatus()).contains(new QueueCount("q", WorkStatus.PENDING, 1));
  }

  @Test
  void concurrentEnqueuesWithTheSameIdempotencyKeyCreateOneItem() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(6);
    try {
      CountDownLatch go = new CountDownLatch(1);
      List<Future<Long>> ids = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        LeaseManager w = worker("w" + i);
        ids.add(pool.submit(() -> {
          go.await();
          return w.enqueue(NewWorkItem.builder("q").idempotencyKey("order-42").build());
        }));
      }
      go.countDown();
      java.util.Set<Long> distinct = new java.util.HashSet<>();
      for (Future<Long> f : ids) {
        distinct.add(f.get());
      }
      assertThat(distinct).hasSize(1);
      assertThat(new QueueMonitor(store).countsByStatus()).containsExactly(new QueueCount("q", WorkStatus.PENDING, 1));
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void enqueueInTheCallersRolledBackTransactionLeavesNothing() throws Exception {
    LeaseManager a = worker("a");
    try (Connection c = store.dataSource().getConnection()) {
      c.setAutoCommit(false);
      a.enqueue(c, NewWorkItem.of("tx", "rolled back"));
      c.rollback();
      long kept = a.enqueue(c, NewWorkItem.of("tx", "committed"));
      c.commit();
      c.setAutoCommit(true);
      assertThat(a.acquire("tx", LEASE)).get().extracting(Lease::itemId).isEqualTo(kept);
      assertThat(a.acquire("tx", LEASE)).isEmpty();
    }
  }

  @Test
  void highestPriorityFirstThenOldest() {
    LeaseManager a = worker("a");
    long low = a.enqueue(NewWorkItem.builder("q").priority(1).build());
    clock.advance(Duration.ofMillis(5));
    long highOld = a.enqueue(NewWorkItem.builder("q").priority(5).build());
    clock.advance(Duration.ofMillis(5));
    long highNew = a.enqueue(NewWorkItem.builder("q").priority(5).build());
    List<Long> order = new ArrayList<>();
    a.acquire(AcquireRequest.batch("q", LEASE, 10)).forEach(l -> order.add(l.itemId()));
    assertThat(order).containsExactly(highOld, highNew, low);
  }

  @Test
  void filtersByWorkTypeAndTaskId() {
    LeaseManager a = worker("a");
    a.enqueue(NewWorkItem.builder("q").workType("build").taskId("t1").build());
    long wanted = a.enqueue(NewWorkItem.builder("q").workType("agent").taskId("t2").build());
    List<Lease> got = a.acquire(new AcquireRequest("q", LEASE, 5, "agent", "t2"));
    assertThat(got).extracting(Lease::itemId).containsExactly(wanted);
  }

  @Test
  void delayedItemIsNotAvailableBeforeItsTime() {
    LeaseManager a = worker("a");
    a.enqueue(NewWorkItem.builder("q").delay(Duration.ofMinutes(1)).build());
    assertThat(a.acquire("q", LEASE)).isEmpty();
    clock.advance(Duration.ofMinutes(1));
    assertThat(a.acquire("q", LEASE)).isPresent();
  }

  @Test
  void redriveRequeuesOneOrAllFailedItems() {
    LeaseManager a = worker("a");
    long one = a.enqueue(NewWorkItem.builder("q").maxAttempts(1).build());
    long two = a.enqueue(NewWorkItem.builder("q").maxAttempts(1).build());
    for (Lease l : a.acquire(AcquireRequest.batch("q", LEASE, 2))) {
      a.release(l.itemId(), l.token(), false, null, "boom");
    }
    assertThat(a.redrive(one)).isTrue();
    assertThat(a.redrive(one)).as("no longer failed").isFalse();
    assertThat(a.redriveAll("q")).isEqualTo(1);
    List<Lease> again = a.acquire(AcquireRequest.batch("q", LEASE, 5));
    assertThat(again).extracting(Lease::itemId).containsExactlyInAnyOrder(one, two);
    assertThat(again).as("delivery count never decreases").allMatch(l -> l.deliveryCount() == 2);
    assertThat(again).as("a fresh budget of the item's own max attempts")
        .allMatch(l -> l.attempt() == 1 && l.maxAttempts() == 1);
    assertThat(a.find(two).orElseThrow().checkpoints()).extracting(Checkpoint::kind)
        .containsExactly(Checkpoint.RELEASED_FAILED, Checkpoint.REDRIVEN);
    for (Lease l : again) {
      assertThat(a.release(l.itemId(), l.token(), false, null, "still broken")).isEqualTo(ReleaseOutcome.FAILED);
    }
    assertThat(a.redriveAll("q", 3)).isEqualTo(2);
    assertThat(a.find(one).orElseThrow()).satisfies(w -> {
      assertThat(w.maxAttempts()).as("a budget granted by number").isEqualTo(3);
      assertThat(w.attempts()).isZero();
    });
  }

  @Test
  void waitingAcquireReturnsAnItemEnqueuedByAnotherThreadDuringTheWait() throws Exception {
    LeaseManager w = worker("waiter");
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      Future<List<Lease>> got =
          pool.submit(() -> w.acquire(AcquireRequest.one("wait-q", LEASE), Duration.ofSeconds(50)));
      long id = worker("producer").enqueue(NewWorkItem.of("wait-q", "late"));
      List<Lease> leases = got.get(40, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(leases).extracting(Lease::itemId).containsExactly(id);
      assertThat(w.find(id).orElseThrow().leaseHolder()).isEqualTo("waiter");
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void waitingAcquireWithNothingToTakeReturnsEmptyWhenItsWaitEnds() {
    long t0 = System.nanoTime();
    assertThat(worker("w").acquire(AcquireRequest.one("empty-q", LEASE), Duration.ofMillis(300))).isEmpty();
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isGreaterThanOrEqualTo(Duration.ofMillis(300));
  }

  @Test
  void waitingAcquireOfAnInterruptedThreadReturnsEmptyAndKeepsTheInterrupt() {
    worker("p").enqueue(NewWorkItem.of("intr-q", "x"));
    Thread.currentThread().interrupt();
    try {
      assertThat(worker("w").acquire(AcquireRequest.one("intr-q", LEASE), Duration.ofSeconds(30))).isEmpty();
      assertThat(Thread.currentThread().isInterrupted()).isTrue();
    } finally {
      Thread.interrupted();
    }
    assertThat(worker("w").acquire(AcquireRequest.one("intr-q", LEASE), Duration.ZERO)).hasSize(1);
  }

  @Test
  void waitTimeOutOfRangeIsRefusedNamingTheValue() {
    LeaseManager w = worker("w");
    assertThatThrownBy(() -> w.acquire(AcquireRequest.one("q", LEASE), Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT-0.001S");
    assertThatThrownBy(() -> w.acquire(AcquireRequest.one("q", LEASE), Duration.ofMinutes(2)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT2M");
  }
}
