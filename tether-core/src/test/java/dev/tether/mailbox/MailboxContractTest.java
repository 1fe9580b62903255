package dev.tether.mailbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import dev.tether.test.SettableClock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The behaviour every {@link Mailbox} implementation promises, one test per behaviour. An
 * implementation's test module subclasses this and supplies a {@link MailboxFixture}.
 *
 * <p>Uses only the {@link Mailbox}/{@link Message} API and the fixture. All lease and expiry
 * decisions are driven by the {@link SettableClock} of the {@link MailboxSpec}: the suite moves it
 * explicitly and never relies on real time passing, except in the long-poll tests, which wait in
 * real time with small bounds. "Oldest first" means in send order.
 */
public abstract class MailboxContractTest {
  /** Budget (charged attempts) of the default mailbox of this suite. */
  protected static final int MAX_ATTEMPTS = 3;

  private static final Duration NO_WAIT = Duration.ZERO;
  private static final Duration MINUTE = Duration.ofMinutes(1);

  /** The fixture of the current test. */
  protected MailboxFixture fixture;

  /** The clock every mailbox of the current test uses. */
  protected SettableClock clock;

  /** A mailbox with {@link #MAX_ATTEMPTS} and no capacity bound. */
  protected Mailbox<String, String> mailbox;

  private final List<Thread> backgroundThreads = new ArrayList<>();

  /**
   * Creates a fresh fixture; called before every test, closed after it.
   *
   * @return the fixture
   */
  protected abstract MailboxFixture createFixture();

  @BeforeEach
  public void setUpMailbox() {
    fixture = createFixture();
    clock = new SettableClock(Instant.parse("2026-03-01T10:00:00Z"));
    mailbox = fixture.create("requests", spec(0));
  }

  @AfterEach
  public void tearDownMailbox() throws InterruptedException {
    try {
      fixture.close();
    } finally {
      for (Thread t : backgroundThreads) {
        t.interrupt();
        t.join(TimeUnit.SECONDS.toMillis(5));
      }
    }
  }

  private MailboxSpec spec(int capacity) {
    return new MailboxSpec(clock, MAX_ATTEMPTS, capacity);
  }

  private Message<String, String> receiveOne(Mailbox<String, String> from, Duration visibility) {
    List<Message<String, String>> got = from.receive(1, visibility, NO_WAIT);
    assertThat(got).as("one message received from %s", from.name()).hasSize(1);
    return got.get(0);
  }

  private Message<String, String> receiveOne(Duration visibility) {
    return receiveOne(mailbox, visibility);
  }

  private void assertNothingReceivable() {
    assertThat(mailbox.receive(10, MINUTE, NO_WAIT)).as("receivable messages").isEmpty();
  }

  private List<String> bodiesIn(Mailbox<String, String> from) {
    List<String> bodies = new ArrayList<>();
    for (Message<String, String> m : from.receive(10, Duration.ofHours(1), NO_WAIT)) {
      bodies.add(m.body());
    }
    return bodies;
  }

  // ---------------------------------------------------------------- send and receive

  @Test
  public void sentMessageIsReceivedWithItsIdBodyAndEnqueueInstant() {
    Instant sentAt = clock.instant();
    String id = mailbox.send("hello");
    clock.advance(Duration.ofSeconds(5));

    Message<String, String> m = receiveOne(MINUTE);

    assertThat(m.id()).isEqualTo(id);
    assertThat(m.body()).isEqualTo("hello");
    assertThat(m.enqueuedAt()).isEqualTo(sentAt);
    assertThat(m.hasReplyTo()).isFalse();
    assertThat(m.receiptHandle()).isNotBlank();
  }

  @Test
  public void sendReturnsDistinctIds() {
    Set<String> ids = new HashSet<>();
    for (int i = 0; i < 20; i++) {
      ids.add(mailbox.send("m" + i));
    }
    assertThat(ids).hasSize(20);
  }

  @Test
  public void firstDeliveryCountIsOne() {
    mailbox.send("a");
    assertThat(receiveOne(MINUTE).deliveryCount()).isEqualTo(1);
  }

  @Test
  public void receiveWithNothingVisibleAndNoWaitReturnsEmpty() {
    assertThat(mailbox.receive(10, MINUTE, NO_WAIT)).isEmpty();
  }

  @Test
  public void messagesAreReceivedOldestFirst() {
    for (int i = 0; i < 5; i++) {
      mailbox.send("m" + i);
    }
    List<Message<String, String>> got = mailbox.receive(10, MINUTE, NO_WAIT);
    assertThat(got).extracting(Message::body).containsExactly("m0", "m1", "m2", "m3", "m4");
  }

  @Test
  public void receiveReturnsAtMostMaxMessages() {
    for (int i = 0; i < 15; i++) {
      mailbox.send("m" + i);
    }
    assertThat(mailbox.receive(4, MINUTE, NO_WAIT))
        .extracting(Message::body)
        .containsExactly("m0", "m1", "m2", "m3");
    assertThat(mailbox.receive(10, MINUTE, NO_WAIT)).hasSize(10);
    assertThat(mailbox.receive(10, MINUTE, NO_WAIT)).extracting(Message::body).containsExactly("m14");
  }

  @Test
  public void receivedMessageIsInvisibleUntilItsVisibilityTimeoutPasses() {
    mailbox.send("a");
    receiveOne(Duration.ofSeconds(30));

    clock.advance(Duration.ofSeconds(30).minusMillis(1));
    assertNothingReceivable();

    clock.advance(Duration.ofMillis(1));
    assertThat(receiveOne(MINUTE).body()).isEqualTo("a");
  }

  @Test
  public void expiredLeaseIsRedeliveredWithHigherDeliveryCountAndNewHandleWithoutAnySweep() {
    String id = mailbox.send("a");
    Message<String, String> first = receiveOne(Duration.ofSeconds(10));

    clock.advance(Duration.ofSeconds(11));
    Message<String, String> second = receiveOne(Duration.ofSeconds(10));

    assertThat(second.id()).isEqualTo(id);
    assertThat(second.deliveryCount()).isEqualTo(2);
    assertThat(second.receiptHandle()).isNotEqualTo(first.receiptHandle());
    assertThat(second.enqueuedAt()).isEqualTo(first.enqueuedAt());
  }

  @Test
  public void receiptHandlesDifferOnEveryDelivery() {
    mailbox.send("a");
    mailbox.send("b");
    Set<String> handles = new HashSet<>();
    int deliveries = 0;
    for (int round = 0; round < MAX_ATTEMPTS; round++) {
      for (Message<String, String> m : mailbox.receive(10, Duration.ZERO, NO_WAIT)) {
        handles.add(m.receiptHandle());
        deliveries++;
      }
    }
    assertThat(deliveries).isEqualTo(2 * MAX_ATTEMPTS);
    assertThat(handles).hasSize(deliveries);
  }

  @Test
  public void deliveryCountNeverDecreasesAcrossNackAndExpiry() {
    mailbox.send("a");
    List<Integer> counts = new ArrayList<>();
    Message<String, String> m = receiveOne(MINUTE);
    counts.add(m.deliveryCount());
    m.nack(Duration.ZERO);
    m = receiveOne(MINUTE);
    counts.add(m.deliveryCount());
    clock.advance(Duration.ofMinutes(2));
    m = receiveOne(MINUTE);
    counts.add(m.deliveryCount());

    assertThat(counts).containsExactly(1, 2, 3);
  }

  @Test
  public void messageSentWithReplyToSaysSo() {
    Mailbox<String, String> replies = fixture.create("replies", spec(0));
    mailbox.send("a", replies);
    assertThat(receiveOne(MINUTE).hasReplyTo()).isTrue();
  }

  // ---------------------------------------------------------------- delivery budget

  @Test
  public void expiredLeaseWithinTheBudgetIsRedelivered() {
    String id = mailbox.send("a");
    for (int delivery = 1; delivery <= MAX_ATTEMPTS; delivery++) {
      Message<String, String> m = receiveOne(Duration.ofSeconds(10));
      assertThat(m.deliveryCount()).isEqualTo(delivery);
      clock.advance(Duration.ofSeconds(10));
    }
    assertThat(fixture.deadLetteredIds(mailbox)).doesNotContain(id).isEmpty();
  }

  @Test
  public void expiredLeaseOnTheLastAttemptIsDeadLetteredAndNeverDeliveredAgain() {
    String id = mailbox.send("a");
    for (int delivery = 1; delivery <= MAX_ATTEMPTS; delivery++) {
      receiveOne(Duration.ofSeconds(10));
      clock.advance(Duration.ofSeconds(10));
    }

    assertNothingReceivable();
    assertThat(fixture.deadLetteredIds(mailbox)).containsExactly(id);
    assertThat(mailbox.approximateCount()).isZero();

    clock.advance(Duration.ofHours(13));
    assertNothingReceivable();
  }

  @Test
  public void messageDeadLetteredOnExpiryLeavesOthersDeliverable() {
    String doomed = mailbox.send("doomed");
    for (int delivery = 1; delivery <= MAX_ATTEMPTS; delivery++) {
      receiveOne(Duration.ofSeconds(10));
      clock.advance(Duration.ofSeconds(10));
    }
    String fresh = mailbox.send("fresh");

    Message<String, String> m = receiveOne(MINUTE);

    assertThat(m.id()).isEqualTo(fresh);
    assertThat(fixture.deadLetteredIds(mailbox)).containsExactly(doomed);
  }

  // ---------------------------------------------------------------- attempts and the budget

  @Test
  public void everyDeliveryReportsItsAttemptAndTheBudget() {
    mailbox.send("a");
    Message<String, String> first = receiveOne(Duration.ofSeconds(10));
    assertThat(first.attempt()).isEqualTo(1);
    assertThat(first.maxAttempts()).isEqualTo(MAX_ATTEMPTS);
    clock.advance(Duration.ofSeconds(10));
    Message<String, String> second = receiveOne(Duration.ofSeconds(10));
    assertThat(second.attempt()).as("an expiry is charged").isEqualTo(2);
    assertThat(second.deliveryCount()).isEqualTo(2);
  }

  @Test
  public void aHandBackIsNotChargedSoTheNextDeliveryIsTheSameAttempt() {
    String id = mailbox.send("a");
    for (int i = 0; i < MAX_ATTEMPTS + 2; i++) {
      Message<String, String> m = receiveOne(MINUTE);
      assertThat(m.attempt()).isEqualTo(1);
      assertThat(m.deliveryCount()).isEqualTo(i + 1);
      m.handBack();
      assertThat(catchThrowable(m::acknowledge))
          .as("the handed-back delivery's handle is stale")
          .isInstanceOf(ReceiptHandleExpiredException.class);
    }
    Message<String, String> last = receiveOne(MINUTE);
    last.acknowledge();
    assertThat(fixture.deadLetteredIds(mailbox)).doesNotContain(id);
  }

  @Test
  public void aHandBackOnTheLastAttemptLetsTheMessageRunAgainAndComplete() {
    String id = mailbox.send("a");
    for (int attempt = 1; attempt < MAX_ATTEMPTS; attempt++) {
      receiveOne(Duration.ofSeconds(10));
      clock.advance(Duration.ofSeconds(10)); // charged expiries
    }
    Message<String, String> lastAttempt = receiveOne(Duration.ofSeconds(10));
    assertThat(lastAttempt.attempt()).isEqualTo(MAX_ATTEMPTS);
    lastAttempt.handBack(); // a worker shutting down gracefully mid-item

    Message<String, String> again = receiveOne(Duration.ofSeconds(10));
    assertThat(again.id()).isEqualTo(id);
    assertThat(again.attempt()).isEqualTo(MAX_ATTEMPTS);
    again.acknowledge();
    assertThat(fixture.deadLetteredIds(mailbox)).isEmpty();
  }

  @Test
  public void aNackIsChargedAndTheLastAttemptsNackDeadLetters() {
    String id = mailbox.send("a");
    for (int attempt = 1; attempt < MAX_ATTEMPTS; attempt++) {
      Message<String, String> m = receiveOne(MINUTE);
      assertThat(m.attempt()).isEqualTo(attempt);
      assertThat(m.nack(Duration.ZERO, "boom " + attempt)).isEqualTo(NackOutcome.RETRY_SCHEDULED);
    }
    Message<String, String> last = receiveOne(MINUTE);
    assertThat(last.attempt()).isEqualTo(MAX_ATTEMPTS);

    assertThat(last.nack(Duration.ZERO, "boom again")).isEqualTo(NackOutcome.DEAD_LETTERED);

    assertNothingReceivable();
    assertThat(fixture.deadLetteredIds(mailbox)).containsExactly(id);
    assertThat(catchThrowable(last::acknowledge)).isInstanceOf(MessageFinalizedException.class);
  }

  @Test
  public void aRequestDeadLetteredExplicitlyIsAnsweredWithAnErrorReply() {
    Mailbox<String, String> replies = fixture.create("replies", spec(0));
    String id = mailbox.send("question", replies);
    receiveOne(MINUTE).deadLetter("cannot answer");

    Message<String, String> answer = receiveOne(replies, MINUTE);
    assertThat(answer.inReplyTo()).hasValue(id);
    assertThat(answer.errorReply()).hasValueSatisfying(e -> {
      assertThat(e.requestId()).isEqualTo(id);
      assertThat(e.reason()).contains("cannot answer");
      assertThat(e.attempts()).isEqualTo(1);
      assertThat(e.cancelled()).isFalse();
    });
    assertThatThrownBy(answer::body)
        .isInstanceOf(RequestFailedException.class)
        .hasMessageContaining(id)
        .satisfies(t -> assertThat(((RequestFailedException) t).error().requestId()).isEqualTo(id));
  }

  @Test
  public void aRequestWhoseBudgetIsSpentByExpiryIsAnsweredWithAnErrorReply() {
    Mailbox<String, String> replies = fixture.create("replies", spec(0));
    String id = mailbox.send("question", replies);
    for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      receiveOne(Duration.ofSeconds(10));
      clock.advance(Duration.ofSeconds(10));
    }
    assertNothingReceivable(); // finds the last expiry and dead-letters the request

    Message<String, String> answer = receiveOne(replies, MINUTE);
    assertThat(answer.errorReply()).hasValueSatisfying(e -> {
      assertThat(e.requestId()).isEqualTo(id);
      assertThat(e.attempts()).isEqualTo(MAX_ATTEMPTS);
      assertThat(e.reason()).contains("expired");
    });
  }

  @Test
  public void aRequestWhoseLastAttemptIsNackedIsAnsweredWithAnErrorReply() {
    Mailbox<String, String> replies = fixture.create("replies", spec(0));
    String id = mailbox.send("question", replies);
    for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      receiveOne(MINUTE).nack(Duration.ZERO, "failed " + attempt);
    }

    Message<String, String> answer = receiveOne(replies, MINUTE);
    assertThat(answer.errorReply()).hasValueSatisfying(e -> {
      assertThat(e.requestId()).isEqualTo(id);
      assertThat(e.reason()).contains("failed " + MAX_ATTEMPTS);
    });
    assertThat(replies.receive(10, MINUTE, NO_WAIT)).as("answered once").isEmpty();
  }

  @Test
  public void aReplyNamesTheRequestItAnswers() {
    Mailbox<String, String> replies = fixture.create("replies", spec(0));
    String id = mailbox.send("question", replies);
    receiveOne(MINUTE).replyAndAcknowledge("answer");

    Message<String, String> answer = receiveOne(replies, MINUTE);
    assertThat(answer.body()).isEqualTo("answer");
    assertThat(answer.inReplyTo()).hasValue(id);
    assertThat(answer.errorReply()).isEmpty();
  }

  // ---------------------------------------------------------------- checkpoints and lease checks

  @Test
  public void aCheckpointIsSeenByTheNextDelivery() {
    mailbox.send("a");
    Message<String, String> first = receiveOne(Duration.ofSeconds(10));
    assertThat(first.lastCheckpoint()).isEmpty();
    first.checkpoint(new byte[] {1});
    first.checkpoint(new byte[] {2, 3});
    assertThat(first.lastCheckpoint()).hasValueSatisfying(b -> assertThat(b).containsExactly(2, 3));
    clock.advance(Duration.ofSeconds(10)); // the worker dies

    Message<String, String> second = receiveOne(Duration.ofSeconds(10));
    assertThat(second.lastCheckpoint()).hasValueSatisfying(b -> assertThat(b).containsExactly(2, 3));
    second.handBack();
    assertThat(receiveOne(MINUTE).lastCheckpoint())
        .as("a hand-back keeps the checkpoint")
        .hasValueSatisfying(b -> assertThat(b).containsExactly(2, 3));
  }

  @Test
  public void aCheckpointThroughAStaleHandleIsRefusedAndChangesNothing() {
    mailbox.send("a");
    Message<String, String> old = receiveOne(Duration.ofSeconds(10));
    old.checkpoint(new byte[] {1});
    clock.advance(Duration.ofSeconds(10));
    Message<String, String> current = receiveOne(Duration.ofSeconds(10));

    assertThatThrownBy(() -> old.checkpoint(new byte[] {9}))
        .isInstanceOf(ReceiptHandleExpiredException.class);

    assertThat(current.lastCheckpoint()).hasValueSatisfying(b -> assertThat(b).containsExactly(1));
    current.handBack();
    assertThat(receiveOne(MINUTE).lastCheckpoint())
        .hasValueSatisfying(b -> assertThat(b).containsExactly(1));
  }

  @Test
  public void aCheckpointOverTheLimitIsRefusedAndChangesNothing() {
    mailbox.send("a");
    Message<String, String> m = receiveOne(MINUTE);
    m.checkpoint(new byte[] {7});

    assertThatThrownBy(() -> m.checkpoint(new byte[Mailbox.MAX_CHECKPOINT_BYTES + 1]))
        .isInstanceOf(InvalidParameterException.class)
        .hasMessageContaining(Integer.toString(Mailbox.MAX_CHECKPOINT_BYTES));

    m.checkpoint(new byte[Mailbox.MAX_CHECKPOINT_BYTES]); // exactly the limit is fine
    m.handBack();
    assertThat(receiveOne(MINUTE).lastCheckpoint())
        .hasValueSatisfying(b -> assertThat(b).hasSize(Mailbox.MAX_CHECKPOINT_BYTES));
  }

  @Test
  public void checkLeaseTellsHeldExpiredAndLostByTheMailboxsClock() {
    mailbox.send("a");
    Message<String, String> m = receiveOne(Duration.ofSeconds(10));
    assertThat(m.checkLease()).isEqualTo(LeaseStatus.HELD);
    clock.advance(Duration.ofSeconds(10));
    assertThat(m.checkLease()).isEqualTo(LeaseStatus.EXPIRED);
    m.extendVisibility(Duration.ofSeconds(30)); // the token still holds until a takeover
    assertThat(m.checkLease()).isEqualTo(LeaseStatus.HELD);
    clock.advance(Duration.ofSeconds(30));
    Message<String, String> newOwner = receiveOne(Duration.ofSeconds(10));
    assertThat(m.checkLease()).isEqualTo(LeaseStatus.LOST);
    assertThat(newOwner.checkLease()).isEqualTo(LeaseStatus.HELD);
    newOwner.acknowledge();
    assertThat(newOwner.checkLease()).isEqualTo(LeaseStatus.LOST);
  }

  // ---------------------------------------------------------------- acknowledge

  @Test
  public void acknowledgedMessageIsNeverDeliveredAgain() {
    mailbox.send("a");
    receiveOne(Duration.ofSeconds(10)).acknowledge();

    clock.advance(Duration.ofHours(13));
    assertNothingReceivable();
    assertThat(mailbox.approximateCount()).isZero();
    assertThat(fixture.deadLetteredIds(mailbox)).isEmpty();
  }

  @Test
  public void expiredButNotRedeliveredLeaseCanStillBeAcknowledged() {
    mailbox.send("a");
    Message<String, String> m = receiveOne(Duration.ofSeconds(10));
    clock.advance(Duration.ofSeconds(60));

    m.acknowledge();

    assertNothingReceivable();
    assertThat(mailbox.approximateCount()).isZero();
  }

  @Test
  public void secondAcknowledgeThroughTheSameHandleThrowsMessageFinalized() {
    mailbox.send("a");
    Message<String, String> m = receiveOne(MINUTE);
    m.acknowledge();

    assertThatThrownBy(m::acknowledge).isInstanceOf(MessageFinalizedException.class);
  }

  @Test
  public void everyOperationAfterFinalizingThroughTheSameHandleThrowsMessageFinalized() {
    Mailbox<String, String> replies = fixture.create("replies", spec(0));
    mailbox.send("a", replies);
    Message<String, String> m = receiveOne(MINUTE);
    m.acknowledge();

    assertRefusedWith(m, MessageFinalizedException.class);
    assertThat(replies.approximateCount()).isZero();
  }

  // ---------------------------------------------------------------- nack

  @Test
  public void nackWithZeroMakesMessageVisibleAtOnce() {
    mailbox.send("a");
    receiveOne(Duration.ofHours(1)).nack(Duration.ZERO);

    Message<String, String> again = receiveOne(MINUTE);
    assertThat(again.deliveryCount()).isEqualTo(2);
  }

  @Test
  public void nackWithDelayMakesMessageVisibleAfterTheDelay() {
    mailbox.send("a");
    receiveOne(Duration.ofHours(1)).nack(Duration.ofSeconds(30));

    clock.advance(Duration.ofSeconds(30).minusMillis(1));
    assertNothingReceivable();

    clock.advance(Duration.ofMillis(1));
    assertThat(receiveOne(MINUTE).deliveryCount()).isEqualTo(2);
  }

  @Test
  public void nackMakesTheHandleStaleForEveryOperation() {
    Mailbox<String, String> replies = fixture.create("replies", spec(0));
    mailbox.send("a", replies);
    Message<String, String> m = receiveOne(MINUTE);
    m.nack(Duration.ofSeconds(30));

    assertRefusedWith(m, ReceiptHandleExpiredException.class);

    assertThat(replies.approximateCount()).isZero();
    assertThat(mailbox.approximateCount()).isEqualTo(1);
    clock.advance(Duration.ofSeconds(30));
    assertThat(receiveOne(MINUTE).deliveryCount()).isEqualTo(2);
  }

  // ---------------------------------------------------------------- extend

  @Test
  public void extendVisibilityNeverShortensALongerLease() {
    mailbox.send("a");
    Message<String, String> m = receiveOne(Duration.ofSeconds(1800));

    m.extendVisibility(Duration.ofSeconds(300));

    clock.advance(Duration.ofSeconds(1000));
    assertNothingReceivable();
    clock.advance(Duration.ofSeconds(799));
    assertNothingReceivable();
    clock.advance(Duration.ofSeconds(1));
    assertThat(receiveOne(MINUTE).deliveryCount()).isEqualTo(2);
  }

  @Test
  public void extendVisibilityKeepsTheMessageInvisibleUntilNowPlusTheTimeout() {
    mailbox.send("a");
    Message<String, String> m = receiveOne(Duration.ofSeconds(30));
    clock.advance(Duration.ofSeconds(20));

    m.extendVisibility(Duration.ofSeconds(120));

    clock.advance(Duration.ofSeconds(119));
    assertNothingReceivable();
    clock.advance(Duration.ofSeconds(1));
    assertThat(receiveOne(MINUTE).deliveryCount()).isEqualTo(2);
  }

  @Test
  public void expiredButNotRedeliveredLeaseCanStillBeExtended() {
    mailbox.send("a");
    Message<String, String> m = receiveOne(Duration.ofSeconds(10));
    clock.advance(Duration.ofSeconds(15));

    m.extendVisibility(Duration.ofSeconds(60));

    clock.advance(Duration.ofSeconds(59));
    assertNothingReceivable();
    m.acknowledge();
    assertThat(mailbox.approximateCount()).isZero();
  }

  // ---------------------------------------------------------------- fencing

  @Test
  public void staleHandleAfterTakeoverIsRefusedForEveryOperationAndChangesNothing() {
    Mailbox<String, String> replies = fixture.create("replies", spec(0));
    mailbox.send("a", replies);
    Message<String, String> stale = receiveOne(Duration.ofSeconds(10));
    clock.advance(Duration.ofSeconds(10));
    Message<String, String> current = receiveOne(Duration.ofSeconds(60));

    assertRefusedWith(stale, ReceiptHandleExpiredException.class);

    assertThat(replies.approximateCount()).as("replies sent through the stale handle").isZero();
    assertThat(fixture.deadLetteredIds(mailbox)).isEmpty();
    assertThat(mailbox.approximateCount()).isEqualTo(1);
    clock.advance(Duration.ofSeconds(59));
    assertNothingReceivable(); // the stale nack/extend changed nothing
    current.replyAndAcknowledge("done");
    assertThat(bodiesIn(replies)).containsExactly("done");
    assertThat(mailbox.approximateCount()).isZero();
  }

  @Test
  public void handleOfAMessageFinalizedThroughAnotherHandleIsStale() {
    mailbox.send("a");
    Message<String, String> stale = receiveOne(Duration.ofSeconds(10));
    clock.advance(Duration.ofSeconds(10));
    receiveOne(MINUTE).acknowledge();

    assertThatThrownBy(stale::acknowledge).isInstanceOf(ReceiptHandleExpiredException.class);
  }

  /** Calls every operation through {@code m} and asserts each throws {@code expected}. */
  private void assertRefusedWith(Message<String, String> m, Class<? extends Throwable> expected) {
    List<Consumer<Message<String, String>>> ops =
        List.of(
            Message::acknowledge,
            x -> x.nack(Duration.ZERO),
            x -> x.extendVisibility(Duration.ofHours(1)),
            x -> x.reply("stale reply"),
            x -> x.replyAndAcknowledge("stale reply"),
            x -> x.deadLetter("stale dead letter"));
    for (Consumer<Message<String, String>> op : ops) {
      assertThat(catchThrowable(() -> op.accept(m))).isInstanceOf(expected);
    }
  }

  // ---------------------------------------------------------------- dead letter

  @Test
  public void deadLetterFinalizesTheMessageAndRecordsIt() {
    String id = mailbox.send("a");
    Message<String, String> m = receiveOne(MINUTE);

    m.deadLetter("poison");

    assertThat(fixture.deadLetteredIds(mailbox)).containsExactly(id);
    assertThat(mailbox.approximateCount()).isZero();
    clock.advance(Duration.ofHours(13));
    assertNothingReceivable();
    assertThatThrownBy(() -> m.deadLetter("again")).isInstanceOf(MessageFinalizedException.class);
  }

  // ---------------------------------------------------------------- count and purge

  @Test
  public void approximateCountCountsVisibleAndInvisibleButNotFinalizedMessages() {
    mailbox.send("a");
    mailbox.send("b");
    mailbox.send("c");
    assertThat(mailbox.approximateCount()).isEqualTo(3);

    List<Message<String, String>> got = mailbox.receive(2, MINUTE, NO_WAIT);
    assertThat(mailbox.approximateCount()).isEqualTo(3);

    got.get(0).acknowledge();
    got.get(1).deadLetter("bad");
    assertThat(mailbox.approximateCount()).isEqualTo(1);
  }

  @Test
  public void purgeDeletesEveryMessageAndMakesOutstandingHandlesStale() {
    mailbox.send("a");
    mailbox.send("b");
    mailbox.send("c");
    Message<String, String> leased = receiveOne(MINUTE);

    assertThat(mailbox.purge()).isEqualTo(3);

    assertThat(mailbox.approximateCount()).isZero();
    clock.advance(Duration.ofHours(13));
    assertNothingReceivable();
    assertThatThrownBy(leased::acknowledge).isInstanceOf(ReceiptHandleExpiredException.class);
    assertThat(mailbox.purge()).isZero();
  }

  @Test
  public void mailboxIsUsableAfterPurge() {
    mailbox.send("old");
    mailbox.purge();
    mailbox.send("new");
    assertThat(receiveOne(MINUTE).body()).isEqualTo("new");
  }

  // ---------------------------------------------------------------- capacity

  @Test
  public void sendBeyondCapacityThrowsMailboxFullWhenTheFixtureSupportsCapacity() {
    Mailbox<String, String> bounded = fixture.create("bounded", spec(2));
    bounded.send("a");
    bounded.send("b");

    if (!fixture.supportsCapacity()) {
      // Documented meaning of supportsCapacity() == false: the bound is not enforced at all.
      bounded.send("c");
      assertThat(bounded.approximateCount()).isEqualTo(3);
      return;
    }
    assertThatThrownBy(() -> bounded.send("c"))
        .isInstanceOf(MailboxFullException.class)
        .hasMessageContaining("bounded")
        .hasMessageContaining("2");
    assertThat(bounded.approximateCount()).isEqualTo(2);

    receiveOne(bounded, MINUTE).acknowledge();
    bounded.send("c");
    assertThat(bounded.approximateCount()).isEqualTo(2);
  }

  @Test
  public void leasedMessagesCountTowardsCapacity() {
    Mailbox<String, String> bounded = fixture.create("bounded", spec(1));
    bounded.send("a");
    Message<String, String> m = receiveOne(bounded, MINUTE);

    if (!fixture.supportsCapacity()) {
      bounded.send("b");
      assertThat(bounded.approximateCount()).isEqualTo(2);
      return;
    }
    assertThatThrownBy(() -> bounded.send("b")).isInstanceOf(MailboxFullException.class);
    m.nack(Duration.ZERO);
    assertThatThrownBy(() -> bounded.send("b")).isInstanceOf(MailboxFullException.class);
  }

  // ---------------------------------------------------------------- long poll and close

  @Test
  public void blockedReceiveReturnsAsSoonAsAMessageIsSent() {
    Background receiver = receiveInBackground(mailbox, Duration.ofSeconds(15));
    receiver.awaitBlocked();

    String id = mailbox.send("wake up");

    List<Message<String, String>> got = receiver.result(Duration.ofSeconds(5));
    assertThat(got).extracting(Message::id).containsExactly(id);
  }

  @Test
  public void closeWakesBlockedReceiversWhichReturnEmpty() {
    Background first = receiveInBackground(mailbox, Duration.ofSeconds(15));
    Background second = receiveInBackground(mailbox, Duration.ofSeconds(15));
    first.awaitBlocked();
    second.awaitBlocked();

    mailbox.close();

    assertThat(first.result(Duration.ofSeconds(5))).isEmpty();
    assertThat(second.result(Duration.ofSeconds(5))).isEmpty();
  }

  @Test
  public void interruptedReceiveReturnsWithTheInterruptFlagSet() {
    Background receiver = receiveInBackground(mailbox, Duration.ofSeconds(15));
    receiver.awaitBlocked();

    receiver.thread.interrupt();

    assertThat(receiver.result(Duration.ofSeconds(5))).isEmpty();
    assertThat(receiver.interruptFlagAfterReturn).isTrue();
  }

  @Test
  public void receiveWithWaitReturnsEmptyWhenNothingArrivesInTime() {
    long start = System.nanoTime();
    assertThat(mailbox.receive(1, MINUTE, Duration.ofMillis(200))).isEmpty();
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(150));
  }

  @Test
  public void sendOnClosedMailboxThrowsIllegalState() {
    mailbox.close();
    assertThatThrownBy(() -> mailbox.send("late")).isInstanceOf(IllegalStateException.class);
  }

  @Test
  public void receiveOnClosedMailboxReturnsEmpty() {
    mailbox.send("a");
    mailbox.close();
    assertThat(mailbox.receive(10, MINUTE, Duration.ofSeconds(5))).isEmpty();
  }

  @Test
  public void closeIsIdempotent() {
    mailbox.close();
    mailbox.close();
    assertThat(mailbox.receive(1, MINUTE, NO_WAIT)).isEmpty();
  }

  /** A receive running on its own thread. */
  private final class Background {
    final Thread thread;
    final CompletableFuture<List<Message<String, String>>> future = new CompletableFuture<>();
    volatile boolean interruptFlagAfterReturn;

    Background(Mailbox<String, String> from, Duration wait) {
      thread =
          new Thread(
              () -> {
                try {
                  List<Message<String, String>> got = from.receive(1, MINUTE, wait);
                  interruptFlagAfterReturn = Thread.currentThread().isInterrupted();
                  future.complete(got);
                } catch (Throwable t) {
                  future.completeExceptionally(t);
                }
              },
              "tether-test-receiver");
      thread.setDaemon(true);
    }

    void awaitBlocked() {
      await()
          .atMost(Duration.ofSeconds(5))
          .until(
              () ->
                  thread.getState() == Thread.State.WAITING
                      || thread.getState() == Thread.State.TIMED_WAITING);
      assertThat(future).as("receive returned before anything was sent").isNotDone();
    }

    List<Message<String, String>> result(Duration within) {
      await().atMost(within).until(future::isDone);
      return future.join();
    }
  }

  private Background receiveInBackground(Mailbox<String, String> from, Duration wait) {
    Background b = new Background(from, wait);
    backgroundThreads.add(b.thread);
    b.thread.start();
    return b;
  }

  // ---------------------------------------------------------------- reply

  @Test
  public void replyAndAcknowledgeSendsTheReplyAndFinalizesTheMessage() {
    Mailbox<String, String> replies = fixture.create("replies", spec(0));
    mailbox.send("question", replies);
    Message<String, String> m = receiveOne(MINUTE);

    m.replyAndAcknowledge("answer");

    assertThat(bodiesIn(replies)).containsExactly("answer");
    assertThat(mailbox.approximateCount()).isZero();
    clock.advance(Duration.ofHours(13));
    assertNothingReceivable();
    assertThatThrownBy(() -> m.replyAndAcknowledge("again"))
        .isInstanceOf(MessageFinalizedException.class);
    assertThat(replies.approximateCount()).isEqualTo(1);
  }

  @Test
  public void replyAndAcknowledgeWithoutReplyToOnlyAcknowledges() {
    mailbox.send("fire and forget");
    Message<String, String> m = receiveOne(MINUTE);

    m.replyAndAcknowledge("ignored");

    assertThat(mailbox.approximateCount()).isZero();
    assertThatThrownBy(m::acknowledge).isInstanceOf(MessageFinalizedException.class);
  }

  @Test
  public void replyAndAcknowledgeThroughAStaleHandleSendsNothingAndFinalizesNothing() {
    Mailbox<String, String> replies = fixture.create("replies", spec(0));
    mailbox.send("question", replies);
    Message<String, String> stale = receiveOne(Duration.ofSeconds(10));
    clock.advance(Duration.ofSeconds(10));
    Message<String, String> current = receiveOne(MINUTE);

    assertThatThrownBy(() -> stale.replyAndAcknowledge("stale answer"))
        .isInstanceOf(ReceiptHandleExpiredException.class);

    assertThat(replies.approximateCount()).isZero();
    assertThat(mailbox.approximateCount()).isEqualTo(1);
    current.acknowledge();
  }

  @Test
  public void replyAndAcknowledgeToAFullReplyMailboxLeavesTheMessageLeased() {
    Mailbox<String, String> replies = fixture.create("replies", spec(1));
    replies.send("filler");
    mailbox.send("question", replies);
    Message<String, String> m = receiveOne(MINUTE);

    if (!fixture.supportsCapacity()) {
      m.replyAndAcknowledge("answer");
      assertThat(replies.approximateCount()).isEqualTo(2);
      return;
    }
    assertThatThrownBy(() -> m.replyAndAcknowledge("answer"))
        .isInstanceOf(MailboxFullException.class);

    assertThat(replies.approximateCount()).isEqualTo(1);
    assertThat(mailbox.approximateCount()).isEqualTo(1);
    assertNothingReceivable(); // still leased through m
    receiveOne(replies, MINUTE).acknowledge();
    m.replyAndAcknowledge("answer");
    assertThat(bodiesIn(replies)).containsExactly("answer");
    assertThat(mailbox.approximateCount()).isZero();
  }

  @Test
  public void replySendsWithoutFinalizingTheMessage() {
    Mailbox<String, String> replies = fixture.create("replies", spec(0));
    mailbox.send("question", replies);
    Message<String, String> m = receiveOne(MINUTE);

    m.reply("progress 1");
    m.reply("progress 2");

    assertThat(mailbox.approximateCount()).isEqualTo(1);
    assertNothingReceivable();
    m.acknowledge();
    assertThat(bodiesIn(replies)).containsExactly("progress 1", "progress 2");
  }

  @Test
  public void replyWithoutReplyToThrowsReplyNotAvailable() {
    mailbox.send("fire and forget");
    Message<String, String> m = receiveOne(MINUTE);

    assertThatThrownBy(() -> m.reply("nobody listens"))
        .isInstanceOf(ReplyNotAvailableException.class);

    m.acknowledge(); // the lease is untouched
  }

  @Test
  public void replyThroughAStaleHandleSendsNothing() {
    Mailbox<String, String> replies = fixture.create("replies", spec(0));
    mailbox.send("question", replies);
    Message<String, String> stale = receiveOne(Duration.ofSeconds(10));
    clock.advance(Duration.ofSeconds(10));
    receiveOne(MINUTE);

    assertThatThrownBy(() -> stale.reply("stale"))
        .isInstanceOf(ReceiptHandleExpiredException.class);
    assertThat(replies.approximateCount()).isZero();
  }

  // ---------------------------------------------------------------- parameters

  @Test
  public void receiveRejectsMaxMessagesOutsideOneToTen() {
    mailbox.send("a");
    assertThatThrownBy(() -> mailbox.receive(0, MINUTE, NO_WAIT))
        .isInstanceOf(InvalidParameterException.class);
    assertThatThrownBy(() -> mailbox.receive(11, MINUTE, NO_WAIT))
        .isInstanceOf(InvalidParameterException.class);
    assertThat(mailbox.receive(10, MINUTE, NO_WAIT)).hasSize(1);
  }

  @Test
  public void receiveRejectsVisibilityTimeoutOutsideZeroToTwelveHours() {
    mailbox.send("a");
    assertThatThrownBy(() -> mailbox.receive(1, Duration.ofMillis(-1), NO_WAIT))
        .isInstanceOf(InvalidParameterException.class);
    assertThatThrownBy(() -> mailbox.receive(1, Duration.ofHours(12).plusMillis(1), NO_WAIT))
        .isInstanceOf(InvalidParameterException.class);
    assertThat(mailbox.approximateCount()).isEqualTo(1);
    assertThat(mailbox.receive(1, Duration.ofHours(12), NO_WAIT)).hasSize(1);
  }

  @Test
  public void receiveRejectsWaitTimeOutsideZeroToTwentySeconds() {
    mailbox.send("a");
    assertThatThrownBy(() -> mailbox.receive(1, MINUTE, Duration.ofMillis(-1)))
        .isInstanceOf(InvalidParameterException.class);
    assertThatThrownBy(() -> mailbox.receive(1, MINUTE, Duration.ofSeconds(20).plusMillis(1)))
        .isInstanceOf(InvalidParameterException.class);
    assertThat(mailbox.receive(1, MINUTE, Duration.ofSeconds(20))).hasSize(1);
  }

  @Test
  public void receiveWithZeroVisibilityLeavesTheMessageReceivableAtOnce() {
    mailbox.send("a");
    Message<String, String> first = receiveOne(Duration.ZERO);
    Message<String, String> second = receiveOne(MINUTE);
    assertThat(second.deliveryCount()).isEqualTo(first.deliveryCount() + 1);
    assertThatThrownBy(first::acknowledge).isInstanceOf(ReceiptHandleExpiredException.class);
  }

  @Test
  public void nackAndExtendRejectTimeoutsOutsideZeroToTwelveHoursAndChangeNothing() {
    mailbox.send("a");
    Message<String, String> m = receiveOne(MINUTE);

    assertThatThrownBy(() -> m.nack(Duration.ofSeconds(-1)))
        .isInstanceOf(InvalidParameterException.class);
    assertThatThrownBy(() -> m.nack(Duration.ofHours(12).plusSeconds(1)))
        .isInstanceOf(InvalidParameterException.class);
    assertThatThrownBy(() -> m.extendVisibility(Duration.ofSeconds(-1)))
        .isInstanceOf(InvalidParameterException.class);
    assertThatThrownBy(() -> m.extendVisibility(Duration.ofHours(12).plusSeconds(1)))
        .isInstanceOf(InvalidParameterException.class);

    assertNothingReceivable();
    clock.advance(MINUTE);
    assertThat(receiveOne(MINUTE).deliveryCount()).isEqualTo(2);
  }
}
