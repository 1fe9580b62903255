package dev.tether.jdbc;

import dev.tether.Codec;
import static org.assertj.core.api.Assertions.assertThat;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tether.mailbox.MailboxException;
import dev.tether.mailbox.Message;
import dev.tether.mailbox.MessageFinalizedException;
import dev.tether.mailbox.ReceiptHandleExpiredException;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Behaviour of the throughput paths (group commit, batch acknowledgement, multi-row enqueue,
 * batched take) on every engine (subclass per engine): they must keep every rule of the
 * one-at-a-time paths.
 */
abstract class ThroughputCompatibilityTest extends StoreTestBase {
  static final Duration LEASE = Duration.ofSeconds(30);

  /** Makes any update that completes item {@code id} fail with an error, rolling back its transaction. */
  abstract void failCompletionOf(Connection c, long id) throws Exception;

  @Test
  void concurrentCompletionsAllCommitAndOnlyTheStaleOnesAreRefused() throws Exception {
    LeaseManager w = new LeaseManager(store, "w");
    List<NewWorkItem> items = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      items.add(NewWorkItem.of("q", "job-" + i));
    }
    w.enqueueAll(items);
    List<Lease> leases = w.acquire(AcquireRequest.batch("q", LEASE, 40));
    assertThat(leases).hasSize(40);
    ExecutorService pool = Executors.newFixedThreadPool(8);
    CountDownLatch go = new CountDownLatch(1);
    try {
      List<Future<Throwable>> outcomes = new ArrayList<>();
      for (int i = 0; i < leases.size(); i++) {
        Lease l = leases.get(i);
        long token = i % 10 == 3 ? l.token() + 1 : l.token(); // every tenth uses a wrong token
        outcomes.add(pool.submit(() -> {
          go.await();
          try {
            w.complete(l.itemId(), token, null);
            return null;
          } catch (RuntimeException e) {
            return e;
          }
        }));
      }
      go.countDown();
      for (int i = 0; i < leases.size(); i++) {
        Throwable t = outcomes.get(i).get();
        WorkItem item = w.find(leases.get(i).itemId()).orElseThrow();
        if (i % 10 == 3) {
          assertThat(t).as("stale completion %d", i).isInstanceOf(LeaseLostException.class);
          assertThat(item.status()).isEqualTo(WorkStatus.IN_PROGRESS);
        } else {
          assertThat(t).as("completion %d", i).isNull();
          assertThat(item.status()).isEqualTo(WorkStatus.COMPLETED);
        }
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void completionsWithAndWithoutOutputOnTheDatabaseClockCommitTogether() throws Exception {
    // Found by the chaos suite after group commit landed: on PostgreSQL without an injected clock a
    // completion with output was handed to the batched statement without an instant.
    try (TetherStore real = db.open(TetherStoreConfig.builder().maximumPoolSize(4).build())) {
      LeaseManager w = new LeaseManager(real, "w");
      w.enqueueAll(List.of(NewWorkItem.of("q", "a"), NewWorkItem.of("q", "b")));
      List<Lease> leases = w.acquire(AcquireRequest.batch("q", LEASE, 2));
      assertThat(leases).hasSize(2);
      ExecutorService pool = Executors.newFixedThreadPool(2);
      try {
        CountDownLatch go = new CountDownLatch(1);
        Future<?> withOutput = pool.submit(() -> {
          go.await();
          w.complete(leases.get(0).itemId(), leases.get(0).token(), "out".getBytes(UTF_8));
          return null;
        });
        Future<?> without = pool.submit(() -> {
          go.await();
          w.complete(leases.get(1).itemId(), leases.get(1).token(), null);
          return null;
        });
        go.countDown();
        withOutput.get(30, TimeUnit.SECONDS);
        without.get(30, TimeUnit.SECONDS);
      } finally {
        pool.shutdownNow();
      }
      WorkItem first = w.find(leases.get(0).itemId()).orElseThrow();
      assertThat(first.status()).isEqualTo(WorkStatus.COMPLETED);
      assertThat(new String(first.output(), UTF_8)).isEqualTo("out");
      assertThat(first.completedAt()).isNotNull();
      assertThat(w.find(leases.get(1).itemId()).orElseThrow().status()).isEqualTo(WorkStatus.COMPLETED);
    }
  }

  @Test
  void groupCommitNeverAcknowledgesAnItemWhoseTransactionRolledBack() throws Exception {
    JdbcMailbox<String, String> box = JdbcMailbox.builder(store, "q", Codec.utf8(), Codec.utf8())
        .clock(clock).build();
    box.send("good");
    box.send("poisoned");
    List<Message<String, String>> got = box.receive(2, LEASE, Duration.ZERO);
    assertThat(got).hasSize(2);
    long poisoned = Long.parseLong(got.get(1).id());
    try (Connection c = store.dataSource().getConnection()) {
      failCompletionOf(c, poisoned);
    }

    Map<String, MailboxException> refused = box.acknowledgeAll(got);

    // Both were in one transaction, which failed: neither is acknowledged, both can be retried.
    assertThat(refused).containsOnlyKeys(got.get(0).id(), got.get(1).id());
    LeaseManager lm = new LeaseManager(store, "check");
    for (Message<String, String> m : got) {
      assertThat(lm.find(Long.parseLong(m.id())).orElseThrow().status()).isEqualTo(WorkStatus.IN_PROGRESS);
    }
    got.get(0).acknowledge();
    assertThat(lm.find(Long.parseLong(got.get(0).id())).orElseThrow().status()).isEqualTo(WorkStatus.COMPLETED);
  }

  @Test
  void acknowledgeAllCompletesEachAndRefusesOnlyTheStaleAndTheRepeated() {
    JdbcMailbox<String, String> box = JdbcMailbox.builder(store, "q", Codec.utf8(), Codec.utf8())
        .clock(clock).build();
    box.send("a");
    box.send("b");
    List<Message<String, String>> first = box.receive(1, LEASE, Duration.ZERO);
    clock.advance(LEASE.plusSeconds(1));
    // "a" expired and is redelivered: the first handle is stale; "b" is delivered too.
    List<Message<String, String>> second = box.receive(2, LEASE, Duration.ZERO);
    assertThat(second).extracting(Message::body).containsExactly("a", "b");
    List<Message<String, String>> batch = List.of(first.get(0), second.get(1), second.get(1));

    Map<String, MailboxException> refused = box.acknowledgeAll(batch);

    assertThat(refused).hasSize(2);
    assertThat(refused.get(first.get(0).id())).isInstanceOf(ReceiptHandleExpiredException.class);
    assertThat(refused.get(second.get(1).id())).isInstanceOf(MessageFinalizedException.class);
    LeaseManager lm = new LeaseManager(store, "check");
    assertThat(lm.find(Long.parseLong(second.get(1).id())).orElseThrow().status()).isEqualTo(WorkStatus.COMPLETED);
    assertThat(lm.find(Long.parseLong(second.get(0).id())).orElseThrow().status()).isEqualTo(WorkStatus.IN_PROGRESS);
    assertThatThrownBy(() -> second.get(1).acknowledge()).isInstanceOf(MessageFinalizedException.class);
  }

  @Test
  void acknowledgeAllRejectsMessagesOfAnotherMailboxAndAcknowledgesNothing() {
    JdbcMailbox<String, String> a = JdbcMailbox.builder(store, "qa", Codec.utf8(), Codec.utf8()).clock(clock).build();
    JdbcMailbox<String, String> b = JdbcMailbox.builder(store, "qb", Codec.utf8(), Codec.utf8()).clock(clock).build();
    a.send("x");
    b.send("y");
    Message<String, String> ma = a.receive(1, LEASE, Duration.ZERO).get(0);
    Message<String, String> mb = b.receive(1, LEASE, Duration.ZERO).get(0);
    assertThatThrownBy(() -> a.acknowledgeAll(List.of(ma, mb)))
        .isInstanceOf(dev.tether.mailbox.InvalidParameterException.class)
        .hasMessageContaining("qa");
    LeaseManager lm = new LeaseManager(store, "check");
    assertThat(lm.find(Long.parseLong(ma.id())).orElseThrow().status()).isEqualTo(WorkStatus.IN_PROGRESS);
  }

  @Test
  void batchEnqueueKeepsOrderAcrossChunksAndHonoursIdempotencyKeys() {
    LeaseManager w = new LeaseManager(store, "w");
    long existing = w.enqueue(NewWorkItem.builder("q").input("keyed-before").idempotencyKey("k1").build());
    List<NewWorkItem> items = new ArrayList<>();
    int n = SqliteEngine.INSERT_CHUNK * 2 + 7;
    for (int i = 0; i < n; i++) {
      if (i == 5) {
        items.add(NewWorkItem.builder("q").input("dup").idempotencyKey("k1").build());
      } else if (i == SqliteEngine.INSERT_CHUNK + 1) {
        items.add(NewWorkItem.builder("q").input("keyed-" + i).idempotencyKey("k2").priority(2).build());
      } else {
        items.add(NewWorkItem.builder("q").input("item-" + i).delay(i == 9 ? Duration.ofMinutes(5) : Duration.ZERO).build());
      }
    }

    List<Long> ids = w.enqueueAll(items);

    assertThat(ids).hasSize(n).doesNotHaveDuplicates();
    assertThat(ids.get(5)).isEqualTo(existing);
    for (int i = 0; i < n; i++) {
      WorkItem item = w.find(ids.get(i)).orElseThrow();
      String expected = i == 5 ? "keyed-before" : (i == SqliteEngine.INSERT_CHUNK + 1 ? "keyed-" + i : "item-" + i);
      assertThat(new String(item.input(), java.nio.charset.StandardCharsets.UTF_8)).as("item %d", i).isEqualTo(expected);
      assertThat(item.status()).isEqualTo(WorkStatus.PENDING);
      assertThat(item.deliveryCount()).isZero();
    }
    assertThat(w.find(ids.get(9)).orElseThrow().availableAt()).isEqualTo(clock.instant().plus(Duration.ofMinutes(5)));
    assertThat(w.find(ids.get(SqliteEngine.INSERT_CHUNK + 1)).orElseThrow().priority()).isEqualTo(2);
  }

  @Test
  void batchedTakeGivesEachLeaseItsOwnTokenAndRecordsTheDelivery() {
    LeaseManager w = new LeaseManager(store, "w");
    List<NewWorkItem> items = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      items.add(NewWorkItem.of("q", "job-" + i));
    }
    w.enqueueAll(items);
    List<Lease> leases = w.acquire(AcquireRequest.batch("q", LEASE, 10));
    assertThat(leases).hasSize(10);
    assertThat(leases).extracting(Lease::token).doesNotHaveDuplicates();
    for (Lease l : leases) {
      WorkItem item = w.find(l.itemId()).orElseThrow();
      assertThat(item.status()).isEqualTo(WorkStatus.IN_PROGRESS);
      assertThat(item.leaseToken()).isEqualTo(l.token());
      assertThat(item.leaseHolder()).isEqualTo("w");
      assertThat(item.deliveryCount()).isEqualTo(1);
      assertThat(item.leaseExpiresAt()).isEqualTo(clock.instant().plus(LEASE));
    }
    assertThat(w.acquire(AcquireRequest.batch("q", LEASE, 10))).isEmpty();
  }

  @Test
  void sweepBatchReclaimsEveryExpiredLeaseExceptTheOneRenewedAfterTheRead() {
    LeaseManager w = new LeaseManager(store, "w");
    List<NewWorkItem> items = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      items.add(NewWorkItem.builder("q").input("job-" + i).maxAttempts(i == 2 ? 1 : 3).build());
    }
    List<Long> ids = w.enqueueAll(items);
    List<Lease> leases = w.acquire(AcquireRequest.batch("q", LEASE, 3));
    assertThat(leases).extracting(Lease::itemId).containsExactlyElementsOf(ids);
    clock.advance(LEASE.plusSeconds(1));
    RecoverySweep sweep = new RecoverySweep(store);
    sweep.afterReadHook(() -> w.renew(ids.get(1), leases.get(1).token(), LEASE));

    RecoveryStats s = sweep.scanAndRecover();

    assertThat(s.expiredFound()).isEqualTo(3);
    assertThat(s.recovered()).isEqualTo(1);
    assertThat(s.failed()).isEqualTo(1);
    assertThat(s.checkpointsCreated()).isEqualTo(2);
    WorkItem retried = w.find(ids.get(0)).orElseThrow();
    assertThat(retried.status()).isEqualTo(WorkStatus.PENDING);
    assertThat(retried.leaseToken()).isNull();
    assertThat(retried.checkpoints()).singleElement().satisfies(cp -> {
      assertThat(cp.kind()).isEqualTo(Checkpoint.LEASE_EXPIRED);
      assertThat(cp.leaseHolder()).isEqualTo("w");
      assertThat(cp.leaseToken()).isEqualTo(leases.get(0).token());
      assertThat(cp.deliveryCount()).isEqualTo(1);
      assertThat(cp.lastHeartbeat()).isEqualTo(clock.instant().minus(LEASE.plusSeconds(1)));
    });
    WorkItem renewed = w.find(ids.get(1)).orElseThrow();
    assertThat(renewed.status()).isEqualTo(WorkStatus.IN_PROGRESS);
    assertThat(renewed.leaseToken()).isEqualTo(leases.get(1).token());
    assertThat(renewed.checkpoints()).isEmpty();
    WorkItem dead = w.find(ids.get(2)).orElseThrow();
    assertThat(dead.status()).isEqualTo(WorkStatus.FAILED);
    assertThat(dead.errorMessage()).contains("no attempts left");
    assertThat(dead.checkpoints()).singleElement().satisfies(cp ->
        assertThat(cp.reason()).contains("no attempts left: failed"));
  }

  @Test
  void concurrentRenewalsAreBatchedAndOnlyTheStaleOneIsRefused() throws Exception {
    LeaseManager w = new LeaseManager(store, "w");
    List<NewWorkItem> items = new ArrayList<>();
    for (int i = 0; i < 24; i++) {
      items.add(NewWorkItem.of("q", "job-" + i));
    }
    w.enqueueAll(items);
    List<Lease> leases = w.acquire(AcquireRequest.batch("q", LEASE, 24));
    clock.advance(Duration.ofSeconds(10));
    Duration longer = Duration.ofMinutes(2);
    ExecutorService pool = Executors.newFixedThreadPool(8);
    CountDownLatch go = new CountDownLatch(1);
    try {
      List<Future<Object>> outcomes = new ArrayList<>();
      for (int i = 0; i < leases.size(); i++) {
        Lease l = leases.get(i);
        long token = i == 7 ? l.token() ^ 1 : l.token();
        outcomes.add(pool.submit(() -> {
          go.await();
          try {
            return w.renew(l.itemId(), token, longer);
          } catch (RuntimeException e) {
            return e;
          }
        }));
      }
      go.countDown();
      for (int i = 0; i < leases.size(); i++) {
        Object o = outcomes.get(i).get();
        WorkItem item = w.find(leases.get(i).itemId()).orElseThrow();
        if (i == 7) {
          assertThat(o).isInstanceOf(LeaseConflictException.class);
          assertThat(item.leaseExpiresAt()).isEqualTo(leases.get(i).expiresAt());
        } else {
          assertThat(o).as("renewal %d", i).isEqualTo(clock.instant().plus(longer));
          assertThat(item.leaseExpiresAt()).isEqualTo(clock.instant().plus(longer));
          assertThat(item.heartbeatAt()).isEqualTo(clock.instant());
        }
      }
    } finally {
      pool.shutdownNow();
    }
    // never shortens: a shorter renewal keeps the longer expiry
    assertThat(w.renew(leases.get(0).itemId(), leases.get(0).token(), Duration.ofSeconds(1)))
        .isEqualTo(clock.instant().plus(longer));
  }

  @Test
  void aFusedGroupRefusesTheStaleCompletionAloneAndStillAcquires() {
    LeaseManager w = new LeaseManager(store, "w");
    List<Long> ids = w.enqueueAll(List.of(NewWorkItem.of("q", "a"), NewWorkItem.of("q", "b"), NewWorkItem.of("q", "c")));
    List<Lease> held = w.acquire(AcquireRequest.batch("q", LEASE, 2));
    assertThat(held).extracting(Lease::itemId).containsExactly(ids.get(0), ids.get(1));
    GroupCommitter.Completion stale =
        new GroupCommitter.Completion(ids.get(0), held.get(0).token() ^ 1, null, clock);
    GroupCommitter.Completion good = new GroupCommitter.Completion(ids.get(1), held.get(1).token(), null, clock);
    GroupCommitter.Completion acquisition =
        GroupCommitter.Completion.acquisition(AcquireRequest.batch("q", LEASE, 5), "fused", clock);

    // One thread submits all three at once: they form one group, one transaction.
    store.committer().submitAll(List.of(stale, good, acquisition));

    assertThat(stale.error).isInstanceOf(LeaseConflictException.class);
    assertThat(good.error).isNull();
    assertThat(acquisition.error).isNull();
    assertThat(acquisition.leases).extracting(Lease::itemId).containsExactly(ids.get(2));
    WorkItem a = w.find(ids.get(0)).orElseThrow();
    assertThat(a.status()).isEqualTo(WorkStatus.IN_PROGRESS);
    assertThat(a.leaseToken()).isEqualTo(held.get(0).token());
    assertThat(w.find(ids.get(1)).orElseThrow().status()).isEqualTo(WorkStatus.COMPLETED);
    WorkItem c = w.find(ids.get(2)).orElseThrow();
    assertThat(c.status()).isEqualTo(WorkStatus.IN_PROGRESS);
    assertThat(c.leaseHolder()).isEqualTo("fused");
    assertThat(c.leaseToken()).isEqualTo(acquisition.leases.get(0).token());
  }

  @Test
  void aFusedGroupWhoseTransactionFailsTakesNothingAndCompletesNothing() throws Exception {
    assertAFailingGroupTakesNothingAndCompletesNothing(store, clock);
  }

  /**
   * Submits a completion whose update a trigger refuses and an acquisition as one group on
   * {@code s} (instants from {@code groupClock}, null: the database clock): both fail with the same
   * error, the held item stays in progress and the pending one stays pending and can be taken.
   */
  void assertAFailingGroupTakesNothingAndCompletesNothing(TetherStore s, java.time.Clock groupClock)
      throws Exception {
    LeaseManager w = new LeaseManager(s, "w");
    List<Long> ids = w.enqueueAll(List.of(NewWorkItem.of("q", "a"), NewWorkItem.of("q", "b")));
    Lease held = w.acquire("q", LEASE).orElseThrow();
    try (Connection c = s.dataSource().getConnection()) {
      failCompletionOf(c, held.itemId());
    }
    GroupCommitter.Completion poisoned = new GroupCommitter.Completion(held.itemId(), held.token(), null, groupClock);
    GroupCommitter.Completion acquisition =
        GroupCommitter.Completion.acquisition(AcquireRequest.batch("q", LEASE, 5), "fused", groupClock);

    s.committer().submitAll(List.of(poisoned, acquisition));

    assertThat(poisoned.error).isInstanceOf(TetherStoreException.class);
    assertThat(acquisition.error).isSameAs(poisoned.error);
    assertThat(acquisition.leases).isNull();
    assertThat(w.find(ids.get(0)).orElseThrow().status()).isEqualTo(WorkStatus.IN_PROGRESS);
    assertThat(w.find(ids.get(1)).orElseThrow().status()).isEqualTo(WorkStatus.PENDING);
    assertThat(w.acquire(AcquireRequest.batch("q", LEASE, 5))).extracting(Lease::itemId).containsExactly(ids.get(1));
  }

  @Test
  void aGroupEndingInAnErrorLeavesNoMemberLookingApplied() {
    LeaseManager w = new LeaseManager(store, "w");
    long id = w.enqueue(NewWorkItem.of("q", "a"));
    w.enqueue(NewWorkItem.of("q", "b"));
    Lease held = w.acquire("q", LEASE).orElseThrow();
    java.time.Clock broken = new java.time.Clock() {
      @Override
      public java.time.ZoneId getZone() {
        return java.time.ZoneOffset.UTC;
      }

      @Override
      public java.time.Clock withZone(java.time.ZoneId zone) {
        return this;
      }

      @Override
      public java.time.Instant instant() {
        throw new AssertionError("the clock broke");
      }
    };
    GroupCommitter.Completion completion = new GroupCommitter.Completion(id, held.token(), null, broken);
    GroupCommitter.Completion acquisition =
        GroupCommitter.Completion.acquisition(AcquireRequest.batch("q", LEASE, 5), "fused", broken);

    assertThatThrownBy(() -> store.committer().submitAll(List.of(completion, acquisition)))
        .as("the leader gets the error itself").isInstanceOf(AssertionError.class);

    assertThat(completion.isDone()).isTrue();
    assertThat(completion.error()).as("not passed off as applied")
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("without an outcome");
    assertThat(acquisition.error()).isInstanceOf(IllegalStateException.class);
    assertThat(acquisition.leases).isNull();
    assertThat(w.find(id).orElseThrow().status()).isEqualTo(WorkStatus.IN_PROGRESS);
  }

  @Test
  void concurrentAcknowledgementsAndReceivesDrainEveryMessageExactlyOnce() throws Exception {
    JdbcMailbox<String, String> box = JdbcMailbox.builder(store, "q", Codec.utf8(), Codec.utf8())
        .clock(clock).build();
    enqueueNumbered(store, "q", 300);
    assertThat(drainConcurrently(box, 6)).hasSize(300).doesNotHaveDuplicates();
    assertThat(box.approximateCount()).isZero();
  }

  /** Enqueues {@code n} items with inputs m0, m1, ... in one batch. */
  static void enqueueNumbered(TetherStore store, String queue, int n) {
    List<NewWorkItem> items = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      items.add(NewWorkItem.builder(queue).input("m" + i).maxAttempts(NewWorkItem.DEFAULT_MAX_ATTEMPTS).build());
    }
    new LeaseManager(store, "p").enqueueAll(items);
  }

  /**
   * Drains {@code box} with {@code threads} workers, each receiving 3 at a time and acknowledging
   * each message on its own until a receive comes back empty; returns every body acknowledged.
   */
  static List<String> drainConcurrently(JdbcMailbox<String, String> box, int threads) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<List<String>>> workers = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        workers.add(pool.submit(() -> {
          List<String> seen = new ArrayList<>();
          while (true) {
            List<Message<String, String>> got = box.receive(3, LEASE, Duration.ZERO);
            if (got.isEmpty()) {
              return seen;
            }
            for (Message<String, String> m : got) {
              m.acknowledge();
              seen.add(m.body());
            }
          }
        }));
      }
      List<String> all = new ArrayList<>();
      for (Future<List<String>> f : workers) {
        all.addAll(f.get(120, TimeUnit.SECONDS));
      }
      return all;
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void singleEnqueueOnTheDatabaseClockRecordsItsInstantsAndDelay() {
    try (TetherStore real = db.open(TetherStoreConfig.builder().maximumPoolSize(2).build())) {
      LeaseManager w = new LeaseManager(real, "w");
      long id = w.enqueue(NewWorkItem.builder("q").input("x").priority(3).maxAttempts(4)
          .delay(Duration.ofMillis(1500).plusNanos(700_000)).build());
      WorkItem item = w.find(id).orElseThrow();
      assertThat(item.status()).isEqualTo(WorkStatus.PENDING);
      assertThat(item.priority()).isEqualTo(3);
      assertThat(item.maxAttempts()).isEqualTo(4);
      assertThat(item.createdAt()).isNotNull();
      assertThat(item.availableAt()).isEqualTo(item.createdAt().plusMillis(1500));
      assertThat(new String(item.input(), UTF_8)).isEqualTo("x");
    }
  }

  @Test
  void singleEnqueueOnTheStoreClockUsesThatClock() {
    LeaseManager w = new LeaseManager(store, "w");
    long id = w.enqueue(NewWorkItem.builder("q").input("x").delay(Duration.ofSeconds(2)).build());
    WorkItem item = w.find(id).orElseThrow();
    assertThat(item.createdAt()).isEqualTo(clock.instant());
    assertThat(item.availableAt()).isEqualTo(clock.instant().plusSeconds(2));
  }

  @Test
  void acquisitionOnTheDatabaseClockLeasesForTheDuration() {
    try (TetherStore real = db.open(TetherStoreConfig.builder().maximumPoolSize(2).build())) {
      LeaseManager w = new LeaseManager(real, "w");
      w.enqueueAll(List.of(NewWorkItem.of("q", "a"), NewWorkItem.builder("q").input("b").priority(5).build()));
      List<Lease> leases = w.acquire(AcquireRequest.batch("q", LEASE, 5));
      assertThat(leases).extracting(Lease::inputAsString).containsExactly("b", "a");
      for (Lease l : leases) {
        assertThat(l.expiresAt()).isEqualTo(l.acquiredAt().plus(LEASE));
        assertThat(l.deliveryCount()).isEqualTo(1);
        WorkItem item = w.find(l.itemId()).orElseThrow();
        assertThat(item.leaseToken()).isEqualTo(l.token());
        assertThat(item.leaseExpiresAt()).isEqualTo(l.expiresAt());
        assertThat(item.leaseHolder()).isEqualTo("w");
      }
    }
  }

  static void execute(Connection c, String sql) throws Exception {
    try (Statement st = c.createStatement()) {
      st.execute(sql);
    }
  }
}
