package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.tether.Codec;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.loop.WorkContext;
import dev.tether.mailbox.InvalidParameterException;
import dev.tether.mailbox.Message;
import dev.tether.mailbox.MessageFinalizedException;
import dev.tether.mailbox.ReceiptHandleExpiredException;
import dev.tether.test.SettableClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Deferred acknowledgements ({@link JdbcMailbox.Builder#deferredAcknowledgements}) on every engine.
 * The store's clock is a settable one that stays still unless a test moves it, so the flusher
 * never times a flush out on its own: what commits a queued acknowledgement is always the step
 * the test takes (a receive, the count bound, a flush, close, or moving the clock).
 */
abstract class DeferredAcknowledgementsCompatibilityTest extends StoreTestBase {
  private static final Duration LEASE = Duration.ofMinutes(1);

  private JdbcMailbox<String, String> deferred(String queue, int maxBatch, Duration maxDelay) {
    return JdbcMailbox.builder(store, queue, Codec.utf8(), Codec.utf8())
        .deferredAcknowledgements(maxBatch, maxDelay).build();
  }

  private WorkItem item(String id) {
    return new LeaseManager(store, "inspector").find(Long.parseLong(id)).orElseThrow();
  }

  private WorkStatus status(String id) {
    return item(id).status();
  }

  @Test
  void anAcknowledgementIsQueuedAndTheNextReceiveCommitsIt() {
    JdbcMailbox<String, String> m = deferred("q", 64, Duration.ofSeconds(1));
    try {
      String a = m.send("a");
      String b = m.send("b");
      Message<String, String> first = m.receive(1, LEASE, Duration.ZERO).get(0);
      assertThat(first.id()).isEqualTo(a);

      first.acknowledge();
      assertThat(status(a)).isEqualTo(WorkStatus.IN_PROGRESS);
      assertThat(m.pendingAcknowledgements()).isEqualTo(1);

      Message<String, String> second = m.receive(1, LEASE, Duration.ZERO).get(0);
      assertThat(second.id()).isEqualTo(b);
      assertThat(status(a)).isEqualTo(WorkStatus.COMPLETED);
      assertThat(m.pendingAcknowledgements()).isZero();
      assertThat(m.deferredAcknowledgementsCommitted()).isEqualTo(1);
    } finally {
      m.close();
    }
  }

  @Test
  void closeCommitsEveryQueuedAcknowledgementBeforeItReturns() {
    JdbcMailbox<String, String> m = deferred("q", 64, Duration.ofSeconds(1));
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      ids.add(m.send("m" + i));
    }
    List<Message<String, String>> got = m.receive(10, LEASE, Duration.ZERO);
    assertThat(got).hasSize(5);
    got.forEach(Message::acknowledge);
    for (String id : ids) {
      assertThat(status(id)).isEqualTo(WorkStatus.IN_PROGRESS);
    }

    m.close();

    for (String id : ids) {
      assertThat(status(id)).isEqualTo(WorkStatus.COMPLETED);
    }
    assertThat(m.pendingAcknowledgements()).isZero();
    assertThat(m.deferredAcknowledgementsCommitted()).isEqualTo(5);
    assertThat(JdbcMailbox.ofStrings(store, "q").receive(10, LEASE, Duration.ZERO)).isEmpty();
  }

  @Test
  void flushMakesQueuedAcknowledgementsDurableAndTheMailboxGoesOn() {
    JdbcMailbox<String, String> m = deferred("q", 64, Duration.ofSeconds(1));
    try {
      String a = m.send("a");
      m.receive(1, LEASE, Duration.ZERO).get(0).acknowledge();
      m.flushAcknowledgements();
      assertThat(status(a)).isEqualTo(WorkStatus.COMPLETED);

      String b = m.send("b");
      m.receive(1, LEASE, Duration.ZERO).get(0).acknowledge();
      assertThat(status(b)).isEqualTo(WorkStatus.IN_PROGRESS);
      m.flushAcknowledgements();
      assertThat(status(b)).isEqualTo(WorkStatus.COMPLETED);
    } finally {
      m.close();
    }
  }

  @Test
  void theDelayBoundCommitsWithoutAnyReceive() {
    JdbcMailbox<String, String> m = deferred("q", 64, Duration.ofMillis(20));
    try {
      String a = m.send("a");
      m.receive(1, LEASE, Duration.ZERO).get(0).acknowledge();
      assertThat(status(a)).isEqualTo(WorkStatus.IN_PROGRESS);

      clock.advance(Duration.ofMillis(20)); // the oldest has now waited maxDelay

      await().untilAsserted(() -> assertThat(status(a)).isEqualTo(WorkStatus.COMPLETED));
      await().untilAsserted(() -> assertThat(m.pendingAcknowledgements()).isZero());
    } finally {
      m.close();
    }
  }

  @Test
  void theAcknowledgementThatReachesTheCountBoundCommitsAllBeforeItReturns() {
    JdbcMailbox<String, String> m = deferred("q", 3, Duration.ofSeconds(1));
    try {
      for (int i = 0; i < 3; i++) {
        m.send("m" + i);
      }
      List<Message<String, String>> got = m.receive(3, LEASE, Duration.ZERO);
      got.get(0).acknowledge();
      got.get(1).acknowledge();
      assertThat(status(got.get(0).id())).isEqualTo(WorkStatus.IN_PROGRESS);
      assertThat(status(got.get(1).id())).isEqualTo(WorkStatus.IN_PROGRESS);
      assertThat(m.pendingAcknowledgements()).isEqualTo(2);

      got.get(2).acknowledge();

      for (Message<String, String> msg : got) {
        assertThat(status(msg.id())).isEqualTo(WorkStatus.COMPLETED);
      }
      assertThat(m.pendingAcknowledgements()).isZero();
    } finally {
      m.close();
    }
  }

  @Test
  void aStaleDeferredAcknowledgementIsRefusedCountedAndLeavesTheNewHolderAlone() {
    JdbcMailbox<String, String> slow = deferred("q", 64, Duration.ofSeconds(1));
    JdbcMailbox<String, String> fresh = JdbcMailbox.ofStrings(store, "q");
    try {
      String id = slow.send("x");
      Message<String, String> old = slow.receive(1, LEASE, Duration.ZERO).get(0);
      clock.advance(LEASE.plusSeconds(1)); // the slow worker's lease expires
      Message<String, String> redelivered = fresh.receive(1, LEASE, Duration.ZERO).get(0);
      assertThat(redelivered.id()).isEqualTo(id);
      assertThat(redelivered.deliveryCount()).isEqualTo(2);
      Long freshToken = item(id).leaseToken();

      old.acknowledge(); // queued: the refusal cannot reach this caller
      slow.flushAcknowledgements();

      assertThat(slow.deferredAcknowledgementsRefused()).isEqualTo(1);
      assertThat(slow.deferredAcknowledgementsCommitted()).isZero();
      WorkItem item = item(id);
      assertThat(item.status()).isEqualTo(WorkStatus.IN_PROGRESS);
      assertThat(item.leaseToken()).isEqualTo(freshToken);
      redelivered.extendVisibility(LEASE);
      redelivered.acknowledge();
      assertThat(status(id)).isEqualTo(WorkStatus.COMPLETED);
    } finally {
      slow.close();
      fresh.close();
    }
  }

  @Test
  void aCrashRedeliversOnlyTheUnflushedItemsAndLosesNothing() {
    JdbcMailbox<String, String> m = deferred("q", 64, Duration.ofSeconds(1));
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      ids.add(m.send("m" + i));
    }
    List<Message<String, String>> got = m.receive(6, LEASE, Duration.ZERO);
    got.get(0).acknowledge();
    got.get(1).acknowledge();
    m.flushAcknowledgements(); // m0, m1 durable
    got.get(2).acknowledge();
    got.get(3).acknowledge(); // m2, m3 finished, their acknowledgements still queued
    // m4, m5 still being worked on when the process dies

    // Another process, its clock past the dead one's leases, sees the database as the crash left
    // it (this store's clock stays still, so nothing here times a flush out meanwhile).
    SettableClock later = new SettableClock(clock.instant().plus(LEASE).plusSeconds(1));
    try (TetherStore other = db.open(TetherStoreConfig.builder().clock(later).maximumPoolSize(4).build())) {
      JdbcMailbox<String, String> survivor = JdbcMailbox.ofStrings(other, "q");
      List<Message<String, String>> again = survivor.receive(10, LEASE, Duration.ZERO);
      Set<String> redelivered = new TreeSet<>();
      again.forEach(msg -> redelivered.add(msg.id()));
      assertThat(redelivered).containsExactlyInAnyOrderElementsOf(ids.subList(2, 6));
      assertThat(status(ids.get(0))).isEqualTo(WorkStatus.COMPLETED);
      assertThat(status(ids.get(1))).isEqualTo(WorkStatus.COMPLETED);
      again.forEach(Message::acknowledge);
      for (String id : ids) {
        assertThat(status(id)).isEqualTo(WorkStatus.COMPLETED);
      }
      assertThat(survivor.receive(10, LEASE, Duration.ZERO)).isEmpty();
    }
    // the dead worker's queued acknowledgements, if they ever reach the database, are refused
    m.close();
    assertThat(m.deferredAcknowledgementsRefused()).isEqualTo(2);
    assertThat(m.deferredAcknowledgementsCommitted()).isEqualTo(2);
  }

  @Test
  void operationsAfterADeferredAcknowledgementAreRefusedWithoutTouchingTheStore() {
    JdbcMailbox<String, String> m = deferred("q", 64, Duration.ofSeconds(1));
    try {
      String id = m.send("a");
      Message<String, String> msg = m.receive(1, LEASE, Duration.ZERO).get(0);
      msg.acknowledge();
      assertThatThrownBy(() -> msg.extendVisibility(LEASE))
          .isInstanceOf(MessageFinalizedException.class).hasMessageContaining("extendVisibility");
      assertThatThrownBy(msg::acknowledge).isInstanceOf(MessageFinalizedException.class);
      assertThatThrownBy(() -> msg.nack(Duration.ZERO, "late")).isInstanceOf(MessageFinalizedException.class);
      assertThatThrownBy(msg::handBack).isInstanceOf(MessageFinalizedException.class);
      assertThatThrownBy(() -> msg.checkpoint(new byte[] {1})).isInstanceOf(MessageFinalizedException.class);
      assertThatThrownBy(() -> msg.deadLetter("late")).isInstanceOf(MessageFinalizedException.class);
      assertThat(m.pendingAcknowledgements()).isEqualTo(1);
      m.flushAcknowledgements();
      assertThat(status(id)).isEqualTo(WorkStatus.COMPLETED);
      assertThat(item(id).checkpoints()).isEmpty();
    } finally {
      m.close();
    }
  }

  @Test
  void resultsKeptAsOutputAreWrittenByTheDeferredAcknowledgement() {
    JdbcMailbox<String, String> m = JdbcMailbox.builder(store, "q", Codec.utf8(), Codec.utf8())
        .keepResults(true).deferredAcknowledgements(64, Duration.ofSeconds(1)).build();
    String id = m.send("a");
    m.receive(1, LEASE, Duration.ZERO).get(0).replyAndAcknowledge("result");
    assertThat(status(id)).isEqualTo(WorkStatus.IN_PROGRESS);
    m.close();
    assertThat(item(id).status()).isEqualTo(WorkStatus.COMPLETED);
    assertThat(item(id).outputAsString()).isEqualTo("result");
  }

  @Test
  void aReplyIsNeverDeferred() {
    JdbcMailbox<String, String> requests = deferred("requests", 64, Duration.ofSeconds(1));
    JdbcMailbox<String, String> replies = JdbcMailbox.ofStrings(store, "replies");
    try {
      String id = requests.send("question", replies);
      requests.receive(1, LEASE, Duration.ZERO).get(0).replyAndAcknowledge("answer");
      assertThat(status(id)).isEqualTo(WorkStatus.COMPLETED);
      assertThat(requests.pendingAcknowledgements()).isZero();
      assertThat(replies.receive(1, LEASE, Duration.ZERO)).singleElement()
          .satisfies(r -> assertThat(r.body()).isEqualTo("answer"));
    } finally {
      requests.close();
      replies.close();
    }
  }

  @Test
  void aMainLoopMakesItsAcknowledgementsDurableWhenItStops() {
    JdbcMailbox<String, String> m = deferred("jobs", 64, Duration.ofSeconds(1));
    try {
      List<String> ids = List.of(m.send("a"), m.send("b"), m.send("c"));
      MainLoopConfig config = MainLoopConfig.builder().visibilityTimeout(LEASE)
          .waitTime(Duration.ZERO).maxMessages(1).build();
      MainLoop.builder("short-jobs", m, (String body, WorkContext ctx) -> body + "!")
          .config(config).build().run(3);
      // each receive committed the previous acknowledgement; the loop's stop committed the last
      for (String id : ids) {
        assertThat(status(id)).isEqualTo(WorkStatus.COMPLETED);
      }
      assertThat(m.pendingAcknowledgements()).isZero();
    } finally {
      m.close();
    }
  }

  @Test
  void theModeIsValidatedAndReceivesMustAskForALeaseFarLongerThanTheDelay() {
    JdbcMailbox.Builder<String, String> b = JdbcMailbox.builder(store, "q", Codec.utf8(), Codec.utf8());
    assertThatThrownBy(() -> b.deferredAcknowledgements(0, Duration.ofMillis(5)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxBatch must be in 1..256, was 0");
    assertThatThrownBy(() -> b.deferredAcknowledgements(257, Duration.ofMillis(5)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("was 257");
    assertThatThrownBy(() -> b.deferredAcknowledgements(64, Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxDelay must be in 1ms..PT1S");
    assertThatThrownBy(() -> b.deferredAcknowledgements(64, Duration.ofSeconds(2)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("was PT2S");
    assertThatThrownBy(() -> b.deferredAcknowledgements(64, null)).isInstanceOf(NullPointerException.class);

    JdbcMailbox<String, String> m = deferred("q", 64, Duration.ofMillis(100));
    try {
      m.send("a");
      assertThatThrownBy(() -> m.receive(1, Duration.ofMillis(999), Duration.ZERO))
          .isInstanceOf(InvalidParameterException.class)
          .hasMessageContaining("at least 10 x the deferred acknowledgements' maxDelay");
      assertThat(m.receive(1, Duration.ofSeconds(1), Duration.ZERO)).hasSize(1);
      assertThat(m.defersAcknowledgements()).isTrue();
    } finally {
      m.close();
    }
  }

  @Test
  void theDefaultModeIsDurableOnReturnAndThrowsAStaleAcknowledgement() {
    JdbcMailbox<String, String> m = JdbcMailbox.ofStrings(store, "q");
    assertThat(m.defersAcknowledgements()).isFalse();
    String a = m.send("a");
    m.receive(1, LEASE, Duration.ZERO).get(0).acknowledge();
    assertThat(status(a)).isEqualTo(WorkStatus.COMPLETED);

    m.send("b");
    Message<String, String> old = m.receive(1, LEASE, Duration.ZERO).get(0);
    clock.advance(LEASE.plusSeconds(1));
    Message<String, String> again = m.receive(1, LEASE, Duration.ZERO).get(0);
    assertThatThrownBy(old::acknowledge).isInstanceOf(ReceiptHandleExpiredException.class);
    again.acknowledge();
    assertThat(status(again.id())).isEqualTo(WorkStatus.COMPLETED);
    assertThat(m.pendingAcknowledgements()).isZero();
    assertThat(m.deferredAcknowledgementsRefused()).isZero();
    m.close();
  }
}
