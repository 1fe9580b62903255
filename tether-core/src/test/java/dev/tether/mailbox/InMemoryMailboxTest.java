package dev.tether.mailbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.groups.Tuple.tuple;
import static org.awaitility.Awaitility.await;

import dev.tether.test.SettableClock;
import dev.tether.test.SettableTicker;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** What {@link InMemoryMailbox} promises beyond the shared Mailbox contract. */
class InMemoryMailboxTest {
  private static final Duration MINUTE = Duration.ofMinutes(1);
  private static final Duration NO_WAIT = Duration.ZERO;

  private final SettableClock clock = new SettableClock(Instant.parse("2026-03-01T10:00:00Z"));
  private final List<InMemoryMailbox<?, ?>> mailboxes = new ArrayList<>();
  private ExecutorService pool;

  @AfterEach
  void closeEverything() throws InterruptedException {
    mailboxes.forEach(InMemoryMailbox::close);
    if (pool != null) {
      pool.shutdownNow();
      assertThat(pool.awaitTermination(5, TimeUnit.SECONDS)).as("worker threads ended").isTrue();
    }
  }

  /**
   * Daemon threads: a regression that deadlocks them fails the test (timeouts below) instead of
   * keeping the test JVM alive.
   */
  private static ExecutorService newPool(int threads) {
    AtomicInteger n = new AtomicInteger();
    return Executors.newFixedThreadPool(
        threads,
        r -> {
          Thread t = new Thread(r, "tether-test-worker-" + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
  }

  private <T, R> InMemoryMailbox<T, R> track(InMemoryMailbox<T, R> mailbox) {
    mailboxes.add(mailbox);
    return mailbox;
  }

  private InMemoryMailbox<String, String> mailbox(String name, int maxAttempts) {
    return track(
        InMemoryMailbox.<String, String>builder(name)
            .clock(clock)
            .maxAttempts(maxAttempts)
            .build());
  }

  private static Message<String, String> receiveOne(
      Mailbox<String, String> mailbox, Duration visibility) {
    List<Message<String, String>> got = mailbox.receive(1, visibility, NO_WAIT);
    assertThat(got).hasSize(1);
    return got.get(0);
  }

  /** Receives with short leases until the budget is spent and the message is dead-lettered. */
  private void exhaust(InMemoryMailbox<String, String> mailbox) {
    for (int i = 0; i < mailbox.maxAttempts(); i++) {
      receiveOne(mailbox, Duration.ofSeconds(10));
      clock.advance(Duration.ofSeconds(10));
    }
    assertThat(mailbox.receive(10, MINUTE, NO_WAIT)).isEmpty();
  }

  // ---------------------------------------------------------------- builder

  @Test
  void builderRejectsInvalidValuesWithMessagesNamingThem() {
    assertThatThrownBy(() -> InMemoryMailbox.builder(" "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("name");
    assertThatThrownBy(() -> InMemoryMailbox.builder("q").capacity(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("capacity")
        .hasMessageContaining("-1");
    assertThatThrownBy(() -> InMemoryMailbox.builder("q").maxAttempts(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxAttempts")
        .hasMessageContaining("0");
    assertThatThrownBy(() -> InMemoryMailbox.builder("q").clock(null))
        .isInstanceOf(NullPointerException.class);
  }

  @Test
  void defaultsAreUnboundedWithTheDefaultDeliveryBudget() {
    InMemoryMailbox<String, String> mailbox = track(InMemoryMailbox.<String, String>builder("q").build());
    assertThat(mailbox.name()).isEqualTo("q");
    assertThat(mailbox.capacity()).isEqualTo(InMemoryMailbox.UNBOUNDED);
    assertThat(mailbox.maxAttempts()).isEqualTo(Mailbox.DEFAULT_MAX_ATTEMPTS);
    assertThat(mailbox.toString()).contains("'q'");
  }

  @Test
  void fullMailboxMessageNamesTheMailboxAndCapacity() {
    InMemoryMailbox<String, String> mailbox =
        track(InMemoryMailbox.<String, String>builder("orders").clock(clock).capacity(1).build());
    mailbox.send("a");
    assertThatThrownBy(() -> mailbox.send("b"))
        .isInstanceOf(MailboxFullException.class)
        .hasMessageContaining("'orders'")
        .hasMessageContaining("capacity 1");
  }

  @Test
  void deadLettersDoNotCountTowardsCapacity() {
    InMemoryMailbox<String, String> mailbox =
        track(InMemoryMailbox.<String, String>builder("q").clock(clock).capacity(1).build());
    mailbox.send("a");
    receiveOne(mailbox, MINUTE).deadLetter("bad");
    mailbox.send("b");
    assertThat(mailbox.approximateCount()).isEqualTo(1);
  }

  // ---------------------------------------------------------------- dead letters and redrive

  @Test
  void deadLetterOnExpiryRecordsTheReasonCountAndInstants() {
    InMemoryMailbox<String, String> mailbox = mailbox("q", 2);
    Instant sentAt = clock.instant();
    String id = mailbox.send("poison");
    exhaust(mailbox);

    assertThat(mailbox.deadLetters())
        .containsExactly(
            new DeadLetter<>(
                id, "poison", "lease expired on attempt 2 of 2 (delivery 2)", 2, 2, sentAt,
                sentAt.plusSeconds(20)));
  }

  @Test
  void explicitDeadLetterKeepsTheGivenReason() {
    InMemoryMailbox<String, String> mailbox = mailbox("q", 5);
    String id = mailbox.send("bad input");
    receiveOne(mailbox, MINUTE).deadLetter("unparseable");

    assertThat(mailbox.deadLetters()).singleElement().satisfies(
        letter -> {
          assertThat(letter.messageId()).isEqualTo(id);
          assertThat(letter.reason()).isEqualTo("unparseable");
          assertThat(letter.deliveryCount()).isEqualTo(1);
        });
  }

  @Test
  void redriveMakesADeadLetterVisibleAgainWithAFreshBudgetKeepingItsDeliveryCount() {
    InMemoryMailbox<String, String> mailbox = mailbox("q", 2);
    String id = mailbox.send("poison");
    exhaust(mailbox);

    assertThat(mailbox.redrive(id)).isTrue();

    assertThat(mailbox.deadLetters()).isEmpty();
    Message<String, String> m = receiveOne(mailbox, Duration.ofSeconds(10));
    assertThat(m.id()).isEqualTo(id);
    assertThat(m.deliveryCount()).isEqualTo(3);
    assertThat(m.attempt()).isEqualTo(1);
    // A fresh budget of 2: one more expiry is redelivered, the next dead-letters it again.
    clock.advance(Duration.ofSeconds(10));
    assertThat(receiveOne(mailbox, Duration.ofSeconds(10)).attempt()).isEqualTo(2);
    clock.advance(Duration.ofSeconds(10));
    assertThat(mailbox.receive(1, MINUTE, NO_WAIT)).isEmpty();
    assertThat(mailbox.deadLetters()).extracting(DeadLetter::messageId).containsExactly(id);
  }

  @Test
  void redriveOfAnUnknownIdReturnsFalse() {
    InMemoryMailbox<String, String> mailbox = mailbox("q", 2);
    assertThat(mailbox.redrive("no-such-id")).isFalse();
  }

  @Test
  void handlesFromBeforeARedriveStayStale() {
    InMemoryMailbox<String, String> mailbox = mailbox("q", 5);
    String id = mailbox.send("a");
    Message<String, String> finalizer = receiveOne(mailbox, MINUTE);
    finalizer.deadLetter("first");
    mailbox.redrive(id);

    assertThatThrownBy(finalizer::acknowledge).isInstanceOf(MessageFinalizedException.class);
    Message<String, String> again = receiveOne(mailbox, MINUTE);
    again.acknowledge();
    assertThat(mailbox.approximateCount()).isZero();
  }

  @Test
  void redriveKeepsTheReplyTo() {
    InMemoryMailbox<String, String> mailbox = mailbox("q", 5);
    InMemoryMailbox<String, String> replies = mailbox("replies", 5);
    String id = mailbox.send("question", replies);
    receiveOne(mailbox, MINUTE).deadLetter("later");
    mailbox.redrive(id);

    receiveOne(mailbox, MINUTE).replyAndAcknowledge("answer");

    Message<String, String> error = receiveOne(replies, MINUTE);
    assertThat(error.errorReply()).hasValueSatisfying(e -> {
      assertThat(e.requestId()).isEqualTo(id);
      assertThat(e.reason()).isEqualTo("later");
      assertThat(e.attempts()).isEqualTo(1);
    });
    Message<String, String> answer = receiveOne(replies, MINUTE);
    assertThat(answer.body()).isEqualTo("answer");
    assertThat(answer.inReplyTo()).hasValue(id);
  }

  @Test
  void redriveAllRedrivesEveryDeadLetterOldestFirst() {
    InMemoryMailbox<String, String> mailbox = mailbox("q", 5);
    mailbox.send("a");
    mailbox.send("b");
    mailbox.send("c");
    for (Message<String, String> m : mailbox.receive(3, MINUTE, NO_WAIT)) {
      m.deadLetter("batch failed");
    }

    assertThat(mailbox.redriveAll()).isEqualTo(3);

    assertThat(mailbox.deadLetters()).isEmpty();
    assertThat(mailbox.receive(10, MINUTE, NO_WAIT))
        .extracting(Message::body)
        .containsExactly("a", "b", "c");
    assertThat(mailbox.redriveAll()).isZero();
  }

  @Test
  void redriveAllBeyondCapacityChangesNothing() {
    InMemoryMailbox<String, String> mailbox =
        track(InMemoryMailbox.<String, String>builder("q").clock(clock).capacity(2).build());
    mailbox.send("a");
    mailbox.send("b");
    for (Message<String, String> m : mailbox.receive(2, MINUTE, NO_WAIT)) {
      m.deadLetter("failed");
    }
    mailbox.send("c");

    assertThatThrownBy(mailbox::redriveAll)
        .isInstanceOf(MailboxFullException.class)
        .hasMessageContaining("capacity 2");

    assertThat(mailbox.deadLetters()).hasSize(2);
    assertThat(mailbox.approximateCount()).isEqualTo(1);
    assertThat(mailbox.redrive(mailbox.deadLetters().get(0).messageId())).isTrue();
    assertThat(mailbox.approximateCount()).isEqualTo(2);
  }

  @Test
  void deadLettersAreForwardedToTheDeadLetterMailbox() {
    InMemoryMailbox<DeadLetter<String>, Void> dlq =
        track(InMemoryMailbox.<DeadLetter<String>, Void>builder("q-dlq").clock(clock).build());
    InMemoryMailbox<String, String> mailbox =
        track(
            InMemoryMailbox.<String, String>builder("q")
                .clock(clock)
                .maxAttempts(1)
                .deadLetterTo(dlq)
                .build());
    String explicit = mailbox.send("explicit");
    String expired = mailbox.send("expired");
    receiveOne(mailbox, MINUTE).deadLetter("bad");
    receiveOne(mailbox, Duration.ofSeconds(5));
    clock.advance(Duration.ofSeconds(5));
    assertThat(mailbox.receive(1, MINUTE, NO_WAIT)).isEmpty();

    List<Message<DeadLetter<String>, Void>> forwarded = dlq.receive(10, MINUTE, NO_WAIT);
    assertThat(forwarded)
        .extracting(m -> m.body().messageId(), m -> m.body().reason())
        .containsExactly(
            tuple(explicit, "bad"),
            tuple(expired, "lease expired on attempt 1 of 1 (delivery 1)"));
    assertThat(mailbox.deadLetters()).hasSize(2);
  }

  @Test
  void failedForwardKeepsTheDeadLetterAndDoesNotFailTheCaller() {
    InMemoryMailbox<DeadLetter<String>, Void> dlq =
        track(InMemoryMailbox.<DeadLetter<String>, Void>builder("q-dlq").clock(clock).build());
    InMemoryMailbox<String, String> mailbox =
        track(InMemoryMailbox.<String, String>builder("q").clock(clock).deadLetterTo(dlq).build());
    dlq.close();
    String id = mailbox.send("a");

    receiveOne(mailbox, MINUTE).deadLetter("bad");

    assertThat(mailbox.deadLetters()).extracting(DeadLetter::messageId).containsExactly(id);
  }

  // ---------------------------------------------------------------- clock, ticker, close

  @Test
  void blockedReceiveNoticesALeaseExpiringByTheClock() throws Exception {
    InMemoryMailbox<String, String> mailbox = mailbox("q", 5);
    mailbox.send("a");
    receiveOne(mailbox, Duration.ofSeconds(30));
    pool = newPool(1);
    AtomicReference<Thread> receiver = new AtomicReference<>();
    Future<List<Message<String, String>>> waiting =
        pool.submit(
            () -> {
              receiver.set(Thread.currentThread());
              return mailbox.receive(1, MINUTE, Duration.ofSeconds(15));
            });
    await()
        .atMost(Duration.ofSeconds(5))
        .until(
            () ->
                receiver.get() != null
                    && receiver.get().getState() == Thread.State.TIMED_WAITING);
    assertThat(waiting).isNotDone();

    clock.advance(Duration.ofSeconds(30)); // no send, no signal: only the clock moved

    await().atMost(Duration.ofSeconds(5)).until(waiting::isDone);
    assertThat(waiting.get()).extracting(Message::deliveryCount).containsExactly(2);
  }

  @Test
  void receiveWaitIsMeasuredWithTheTicker() throws Exception {
    SettableTicker ticker = new SettableTicker();
    InMemoryMailbox<String, String> mailbox =
        track(InMemoryMailbox.<String, String>builder("q").clock(clock).ticker(ticker).build());
    pool = newPool(1);
    Future<List<Message<String, String>>> waiting =
        pool.submit(() -> mailbox.receive(1, MINUTE, Duration.ofSeconds(1)));
    await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2)).until(() -> !waiting.isDone());

    ticker.advance(Duration.ofSeconds(1));

    await().atMost(Duration.ofSeconds(5)).until(waiting::isDone);
    assertThat(waiting.get()).isEmpty();
  }

  @Test
  void receivedMessagesCanStillBeSettledAfterClose() {
    InMemoryMailbox<String, String> mailbox = mailbox("q", 5);
    mailbox.send("a");
    mailbox.send("b");
    List<Message<String, String>> got = mailbox.receive(2, MINUTE, NO_WAIT);
    mailbox.close();

    got.get(0).acknowledge();
    got.get(1).nack(Duration.ZERO);

    assertThat(mailbox.isClosed()).isTrue();
    assertThat(mailbox.approximateCount()).isEqualTo(1);
  }

  // ---------------------------------------------------------------- reply in progress

  /** A reply mailbox whose sends block until released, to hold a reply "in flight". */
  private static final class GatedMailbox extends ForwardingMailbox<String, String> {
    final CountDownLatch entered = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);
    volatile RuntimeException failWith;

    GatedMailbox(InMemoryMailbox<String, String> delegate) {
      super(delegate.name(), delegate);
    }

    @Override
    public String send(String body) {
      entered.countDown();
      try {
        assertThat(release.await(10, TimeUnit.SECONDS)).isTrue();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
      if (failWith != null) {
        throw failWith;
      }
      return delegate.send(body);
    }

    @Override
    public String send(String body, Mailbox<String, ?> replyTo) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void close() {
      delegate.close();
    }
  }

  @Test
  void messageCannotBeTakenOverWhileItsReplyIsBeingSent() throws Exception {
    InMemoryMailbox<String, String> mailbox = mailbox("q", 5);
    GatedMailbox replies = new GatedMailbox(mailbox("replies", 5));
    mailbox.send("question", replies);
    Message<String, String> m = receiveOne(mailbox, Duration.ofSeconds(10));
    pool = newPool(1);
    Future<?> replying = pool.submit(() -> m.replyAndAcknowledge("answer"));
    assertThat(replies.entered.await(5, TimeUnit.SECONDS)).isTrue();

    clock.advance(Duration.ofMinutes(5)); // the lease expires while the reply is in flight
    assertThat(mailbox.receive(10, MINUTE, NO_WAIT)).as("taken over mid-reply").isEmpty();
    m.extendVisibility(MINUTE); // the lease can still be extended meanwhile
    replies.release.countDown();
    replying.get(5, TimeUnit.SECONDS);

    assertThat(mailbox.approximateCount()).isZero();
    assertThat(receiveOne(replies, MINUTE).body()).isEqualTo("answer");
    assertThatThrownBy(m::acknowledge).isInstanceOf(MessageFinalizedException.class);
  }

  @Test
  void failedReplySendLeavesTheMessageLeasedThroughTheSameHandle() throws Exception {
    InMemoryMailbox<String, String> mailbox = mailbox("q", 5);
    GatedMailbox replies = new GatedMailbox(mailbox("replies", 5));
    replies.failWith = new MailboxConnectionException("reply store down");
    replies.release.countDown();
    mailbox.send("question", replies);
    Message<String, String> m = receiveOne(mailbox, MINUTE);

    assertThatThrownBy(() -> m.replyAndAcknowledge("answer"))
        .isInstanceOf(MailboxConnectionException.class);

    assertThat(mailbox.approximateCount()).isEqualTo(1);
    assertThat(mailbox.receive(1, MINUTE, NO_WAIT)).isEmpty();
    replies.failWith = null;
    m.replyAndAcknowledge("answer");
    assertThat(mailbox.approximateCount()).isZero();
  }

  @Test
  void acknowledgeThroughAHandleThatIsSendingAReplyWaitsForTheReply() throws Exception {
    InMemoryMailbox<String, String> mailbox = mailbox("q", 5);
    GatedMailbox replies = new GatedMailbox(mailbox("replies", 5));
    mailbox.send("question", replies);
    Message<String, String> m = receiveOne(mailbox, MINUTE);
    pool = newPool(2);
    Future<?> replying = pool.submit(() -> m.replyAndAcknowledge("answer"));
    assertThat(replies.entered.await(5, TimeUnit.SECONDS)).isTrue();
    Future<?> acking = pool.submit(m::acknowledge);
    await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(2)).until(() -> !acking.isDone());

    replies.release.countDown();

    replying.get(5, TimeUnit.SECONDS);
    await().atMost(Duration.ofSeconds(5)).until(acking::isDone);
    assertThatThrownBy(acking::get).hasCauseInstanceOf(MessageFinalizedException.class);
  }

  // ---------------------------------------------------------------- concurrency

  @Test
  void mailboxesReplyingToEachOtherConcurrentlyDoNotDeadlock() throws Exception {
    // Not tracked: if a regression deadlocks their locks, closing them in @AfterEach would hang.
    InMemoryMailbox<String, String> a = InMemoryMailbox.<String, String>builder("a").build();
    InMemoryMailbox<String, String> b = InMemoryMailbox.<String, String>builder("b").build();
    int perSide = 2_000;
    for (int i = 0; i < perSide; i++) {
      a.send("to-a-" + i, b);
      b.send("to-b-" + i, a);
    }
    AtomicInteger processedA = new AtomicInteger();
    AtomicInteger processedB = new AtomicInteger();
    pool = newPool(4);
    List<Future<?>> workers = new ArrayList<>();
    for (int t = 0; t < 2; t++) {
      workers.add(pool.submit(() -> replyUntil(a, processedA, 2 * perSide)));
      workers.add(pool.submit(() -> replyUntil(b, processedB, 2 * perSide)));
    }
    for (Future<?> w : workers) {
      w.get(20, TimeUnit.SECONDS); // a deadlock would time out here
    }

    // Each side handled its own messages and the other side's replies, nothing more or less.
    assertThat(processedA).hasValue(2 * perSide);
    assertThat(processedB).hasValue(2 * perSide);
    assertThat(a.approximateCount()).isZero();
    assertThat(b.approximateCount()).isZero();
  }

  private static Void replyUntil(
      InMemoryMailbox<String, String> mailbox, AtomicInteger processed, int total) {
    while (processed.get() < total) {
      for (Message<String, String> m : mailbox.receive(10, MINUTE, Duration.ofMillis(50))) {
        m.replyAndAcknowledge("reply-to-" + m.body());
        processed.incrementAndGet();
      }
    }
    return null;
  }

  @Test
  void concurrentWorkersAcknowledgeEveryMessageExactlyOnce() throws Exception {
    InMemoryMailbox<String, String> mailbox =
        track(InMemoryMailbox.<String, String>builder("stress").build());
    int messages = 20_000;
    int threads = 8;
    for (int i = 0; i < messages; i++) {
      mailbox.send("m" + i);
    }
    Map<String, AtomicInteger> acks = new ConcurrentHashMap<>();
    AtomicLong acked = new AtomicLong();
    pool = newPool(threads);
    List<Future<?>> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      workers.add(
          pool.submit(
              () -> {
                while (acked.get() < messages) {
                  for (Message<String, String> m :
                      mailbox.receive(10, Duration.ofMinutes(10), Duration.ofMillis(20))) {
                    m.acknowledge();
                    acks.computeIfAbsent(m.id(), k -> new AtomicInteger()).incrementAndGet();
                    acked.incrementAndGet();
                  }
                }
                return null;
              }));
    }
    for (Future<?> w : workers) {
      w.get(60, TimeUnit.SECONDS);
    }

    assertThat(acks).hasSize(messages);
    assertThat(acks.values()).allSatisfy(n -> assertThat(n).hasValue(1));
    assertThat(mailbox.approximateCount()).isZero();
  }

  @Test
  void underExpiringLeasesEveryMessageIsCompletedExactlyOnceAndNoneIsLost() throws Exception {
    InMemoryMailbox<String, String> mailbox =
        track(
            InMemoryMailbox.<String, String>builder("expiring")
                .clock(clock)
                .maxAttempts(1_000)
                .build());
    int messages = 5_000;
    int threads = 6;
    for (int i = 0; i < messages; i++) {
      mailbox.send("m" + i);
    }
    Map<String, AtomicInteger> completions = new ConcurrentHashMap<>();
    AtomicLong completed = new AtomicLong();
    AtomicLong refused = new AtomicLong();
    AtomicLong deliveries = new AtomicLong();
    // One lease is certain to be taken over (its holder sits out the whole run), so the run always
    // mixes takeovers in, however the threads happen to be scheduled on a loaded machine.
    Message<String, String> sitter = mailbox.receive(1, Duration.ofSeconds(2), Duration.ZERO).get(0);
    deliveries.incrementAndGet();
    clock.advance(Duration.ofSeconds(3));
    pool = newPool(threads);
    List<Future<?>> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      workers.add(
          pool.submit(
              () -> {
                while (completed.get() < messages) {
                  List<Message<String, String>> got =
                      mailbox.receive(5, Duration.ofSeconds(2), Duration.ofMillis(20));
                  // Every batch moves the shared clock, so leases held by others expire and are
                  // taken over while their holders still work on them.
                  clock.advance(Duration.ofSeconds(1));
                  for (Message<String, String> m : got) {
                    deliveries.incrementAndGet();
                    try {
                      m.acknowledge();
                      completions.computeIfAbsent(m.id(), k -> new AtomicInteger()).incrementAndGet();
                      completed.incrementAndGet();
                    } catch (ReceiptHandleExpiredException lost) {
                      refused.incrementAndGet(); // taken over: the new holder completes it
                    }
                  }
                }
                return null;
              }));
    }
    for (Future<?> w : workers) {
      w.get(60, TimeUnit.SECONDS);
    }
    assertThatThrownBy(sitter::acknowledge).isInstanceOf(ReceiptHandleExpiredException.class);
    refused.incrementAndGet();

    assertThat(completions).hasSize(messages);
    assertThat(completions.values()).allSatisfy(n -> assertThat(n).hasValue(1));
    assertThat(refused.get()).as("deliveries refused after a takeover").isPositive();
    assertThat(deliveries.get()).isEqualTo(messages + refused.get());
    assertThat(mailbox.approximateCount()).isZero();
    assertThat(mailbox.deadLetters()).isEmpty();
  }
}
