package dev.tether.mailbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.tether.test.SettableClock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.Tuple.Tuple2;
import net.jqwik.api.statistics.Statistics;

/**
 * A randomized, model-based test of the {@link Mailbox} contract: generated sequences of send,
 * receive, acknowledge, nack, hand-back, extend, checkpoint, reply, reply-and-acknowledge,
 * dead-letter, purge and clock advances, with old receipt handles deliberately reused, run against a real mailbox and a simple
 * model side by side. After every step the invariants of {@link Mailbox}'s Javadoc are checked:
 *
 * <ul>
 *   <li>every message is in exactly one state (visible, invisible, finalized) and the mailbox
 *       delivers exactly the messages the model says are receivable, oldest first;
 *   <li>receipt handles are never reused;
 *   <li>the delivery count goes up by exactly one per delivery and never decreases;
 *   <li>an operation through a stale handle throws the documented exception and changes nothing;
 *   <li>charged attempts never exceed the budget, for every message, always: a delivery is
 *       charged, a hand-back refunds it, and the attempt that spends the budget (an expiry found
 *       by a receive, a nack) dead-letters the message;
 *   <li>a message is dead-lettered only explicitly, by a nack of its last attempt, or when its
 *       lease expired on its last attempt, and never delivered again;
 *   <li>every dead-lettered request with a reply-to sends exactly one error reply naming it;
 *   <li>a checkpoint is seen by the next delivery, and one written through a stale handle is not;
 *   <li>nothing is lost: at the end, with the clock moved past every lease, every message not yet
 *       finalized is received (or dead-lettered for its budget).
 * </ul>
 *
 * <p>An implementation's test module subclasses this and supplies a {@link MailboxFixture}. jqwik
 * does not run JUnit's {@code @BeforeEach}/{@code @AfterEach}: each try creates and closes its own
 * fixture. Only the {@link Mailbox}/{@link Message} API and the fixture are used; time moves only
 * when the test moves the {@link SettableClock}.
 */
public abstract class MailboxModelTest {
  private static final int MAX_ATTEMPTS = 2;
  private static final String EVENTS = "events";
  private static final String REDELIVERY = "redelivery";
  private static final String EXPIRY_DEAD_LETTER = "dead letter on expiry";
  private static final String NACK_DEAD_LETTER = "dead letter on the last attempt's nack";

  /**
   * Creates a fresh fixture; called once per try, closed at its end.
   *
   * @return the fixture
   */
  protected abstract MailboxFixture createFixture();

  @Property(tries = 200)
  public void mailboxKeepsItsInvariantsUnderRandomOperations(
      @ForAll("commandSequences") List<Command> commands) {
    try (MailboxFixture fixture = createFixture()) {
      Run run = new Run(fixture);
      int step = 0;
      for (Command command : commands) {
        step++;
        run.execute(command, step);
        run.checkInvariants(command, step);
      }
      run.drainAndCheckNothingLost();
    }
    // The property is only as good as the situations it reaches: insist that it reaches these.
    Statistics.label(EVENTS)
        .coverage(
            coverage -> {
              coverage.check(Outcome.OK).count(n -> n >= 200);
              coverage.check(Outcome.STALE).count(n -> n >= 150);
              coverage.check(Outcome.FINALIZED).count(n -> n >= 100);
              coverage.check(REDELIVERY).count(n -> n >= 100);
              coverage.check(EXPIRY_DEAD_LETTER).count(n -> n >= 10);
              coverage.check(NACK_DEAD_LETTER).count(n -> n >= 3); // 13-21 seen in 200 tries
            });
  }

  @Provide
  public Arbitrary<List<Command>> commandSequences() {
    Arbitrary<Integer> pick = Arbitraries.integers().between(0, 7);
    Arbitrary<Command> send = Arbitraries.of(true, false).map(Send::new);
    Arbitrary<Command> receive =
        Combinators.combine(Arbitraries.integers().between(1, 3), Arbitraries.of(0L, 5L, 5L, 30L, 120L))
            .as(Receive::new);
    Arbitrary<Command> ack = pick.map(Ack::new);
    Arbitrary<Command> nack =
        Combinators.combine(pick, Arbitraries.of(0L, 10L, 60L)).as(Nack::new);
    Arbitrary<Command> extend =
        Combinators.combine(pick, Arbitraries.of(0L, 10L, 60L, 300L)).as(Extend::new);
    Arbitrary<Command> reply = pick.map(Reply::new);
    Arbitrary<Command> replyAndAck = pick.map(ReplyAndAck::new);
    Arbitrary<Command> deadLetter = pick.map(DeadLetterCmd::new);
    Arbitrary<Command> handBack = pick.map(HandBack::new);
    Arbitrary<Command> checkpoint = pick.map(Checkpoint::new);
    Arbitrary<Command> advance = Arbitraries.of(1L, 5L, 30L, 121L).map(Advance::new);
    Arbitrary<Command> purge = Arbitraries.<Command>just(new Purge());
    List<Tuple2<Integer, Arbitrary<Command>>> weighted =
        List.of(
            Tuple.of(8, send),
            Tuple.of(10, receive),
            Tuple.of(4, ack),
            Tuple.of(6, nack),
            Tuple.of(4, extend),
            Tuple.of(2, reply),
            Tuple.of(4, replyAndAck),
            Tuple.of(2, deadLetter),
            Tuple.of(3, handBack),
            Tuple.of(3, checkpoint),
            Tuple.of(7, advance),
            Tuple.of(1, purge));
    return Arbitraries.frequencyOf(weighted).list().ofMinSize(20).ofMaxSize(60);
  }

  // ---------------------------------------------------------------- commands

  /** One generated step. */
  public interface Command {}

  /** Sends a message, with or without the reply mailbox as reply-to. */
  public record Send(boolean withReplyTo) implements Command {}

  /** Receives up to {@code max} messages for {@code visibilitySeconds}, without waiting. */
  public record Receive(int max, long visibilitySeconds) implements Command {}

  /** Acknowledges through the {@code pick}-th most recent delivery (possibly stale). */
  public record Ack(int pick) implements Command {}

  /** Nacks through a delivery. */
  public record Nack(int pick, long delaySeconds) implements Command {}

  /** Extends through a delivery. */
  public record Extend(int pick, long seconds) implements Command {}

  /** Replies through a delivery without finalizing. */
  public record Reply(int pick) implements Command {}

  /** Replies and acknowledges through a delivery. */
  public record ReplyAndAck(int pick) implements Command {}

  /** Dead-letters through a delivery. */
  public record DeadLetterCmd(int pick) implements Command {}

  /** Hands back through a delivery (not charged). */
  public record HandBack(int pick) implements Command {}

  /** Writes a checkpoint through a delivery. */
  public record Checkpoint(int pick) implements Command {}

  /** Moves the clock. */
  public record Advance(long seconds) implements Command {}

  /** Purges the mailbox. */
  public record Purge() implements Command {}

  // ---------------------------------------------------------------- model

  private enum State {
    LIVE,
    ACKED,
    DEAD,
    PURGED
  }

  private static final class ModelMessage {
    final String id;
    final String body;
    final long order;
    final boolean hasReplyTo;
    final Instant enqueuedAt;
    State state = State.LIVE;
    int deliveryCount;
    int attempts;
    String checkpoint;
    /** While leased: the lease expiry; otherwise when it is visible again. */
    Instant visibleAt;
    /** The delivery whose handle is valid, or null. */
    ModelDelivery lease;

    ModelMessage(String id, String body, long order, boolean hasReplyTo, Instant enqueuedAt) {
      this.id = id;
      this.body = body;
      this.order = order;
      this.hasReplyTo = hasReplyTo;
      this.enqueuedAt = enqueuedAt;
      this.visibleAt = enqueuedAt;
    }

    boolean receivableAt(Instant now) {
      return state == State.LIVE && !now.isBefore(visibleAt);
    }

    boolean doomedAt(Instant now) {
      return receivableAt(now) && lease != null && attempts >= MAX_ATTEMPTS;
    }
  }

  private static final class ModelDelivery {
    final ModelMessage message;
    final Message<String, String> real;
    boolean finalizedByThis;

    ModelDelivery(ModelMessage message, Message<String, String> real) {
      this.message = message;
      this.real = real;
    }
  }

  /** What an operation through a delivery is expected to do. */
  private enum Outcome {
    OK,
    STALE,
    FINALIZED,
    NO_REPLY_TO
  }

  private static final class Run {
    final MailboxFixture fixture;
    final SettableClock clock = new SettableClock(Instant.parse("2026-06-01T00:00:00Z"));
    final Mailbox<String, String> mailbox;
    final Mailbox<String, String> replies;
    final Map<String, ModelMessage> messages = new LinkedHashMap<>();
    final List<ModelDelivery> deliveries = new ArrayList<>();
    final Set<String> handlesSeen = new HashSet<>();
    final Set<String> deadIds = new HashSet<>();
    /** Requests whose dead letter must have produced an error reply. */
    final Set<String> errorReplyOwed = new HashSet<>();
    long repliesSent;
    long checkpoints;
    long sequence;

    Run(MailboxFixture fixture) {
      this.fixture = fixture;
      this.mailbox = fixture.create("model", new MailboxSpec(clock, MAX_ATTEMPTS, 0));
      this.replies = fixture.create("model-replies", new MailboxSpec(clock, MAX_ATTEMPTS, 0));
    }

    void execute(Command command, int step) {
      if (command instanceof Send s) {
        send(s);
      } else if (command instanceof Receive r) {
        receive(r.max(), Duration.ofSeconds(r.visibilitySeconds()), step);
      } else if (command instanceof Advance a) {
        clock.advance(Duration.ofSeconds(a.seconds()));
      } else if (command instanceof Purge) {
        purge(step);
      } else {
        throughDelivery(command, step);
      }
    }

    private void send(Send s) {
      String body = "body-" + sequence;
      String id = s.withReplyTo() ? mailbox.send(body, replies) : mailbox.send(body);
      assertThat(messages).as("ids are unique").doesNotContainKey(id);
      messages.put(id, new ModelMessage(id, body, sequence++, s.withReplyTo(), clock.instant()));
    }

    private List<Message<String, String>> receive(int max, Duration visibility, int step) {
      Instant now = clock.instant();
      List<String> expected =
          messages.values().stream()
              .filter(m -> m.receivableAt(now) && !m.doomedAt(now))
              .sorted(Comparator.comparingLong(m -> m.order))
              .limit(max)
              .map(m -> m.id)
              .toList();
      List<Message<String, String>> got = mailbox.receive(max, visibility, Duration.ZERO);
      assertThat(got)
          .as("step %d: receive(%d, %s) delivers the receivable messages, oldest first", step, max, visibility)
          .extracting(Message::id)
          .containsExactlyElementsOf(expected);
      for (Message<String, String> real : got) {
        ModelMessage m = messages.get(real.id());
        assertThat(real.deliveryCount())
            .as("step %d: delivery count of %s goes up by one", step, m.id)
            .isEqualTo(m.deliveryCount + 1);
        assertThat(handlesSeen.add(real.receiptHandle()))
            .as("step %d: receipt handle %s is new", step, real.receiptHandle())
            .isTrue();
        assertThat(real.body()).isEqualTo(m.body);
        assertThat(real.enqueuedAt()).isEqualTo(m.enqueuedAt);
        assertThat(real.hasReplyTo()).isEqualTo(m.hasReplyTo);
        assertThat(real.attempt())
            .as("step %d: attempt of %s is its charged attempts plus this one", step, m.id)
            .isEqualTo(m.attempts + 1);
        assertThat(real.maxAttempts()).isEqualTo(MAX_ATTEMPTS);
        assertThat(real.lastCheckpoint().map(b -> new String(b, java.nio.charset.StandardCharsets.UTF_8)))
            .as("step %d: the next delivery of %s sees its latest checkpoint", step, m.id)
            .isEqualTo(java.util.Optional.ofNullable(m.checkpoint));
        if (m.deliveryCount > 0) {
          Statistics.label(EVENTS).collect(REDELIVERY);
        }
        m.deliveryCount++;
        m.attempts++;
        ModelDelivery d = new ModelDelivery(m, real);
        m.lease = d;
        m.visibleAt = now.plus(visibility);
        deliveries.add(d);
      }
      return got;
    }

    private void purge(int step) {
      long live = messages.values().stream().filter(m -> m.state == State.LIVE).count();
      assertThat(mailbox.purge()).as("step %d: purge count", step).isEqualTo(live);
      for (ModelMessage m : messages.values()) {
        if (m.state == State.LIVE) {
          m.state = State.PURGED;
          m.lease = null;
        }
      }
    }

    private void throughDelivery(Command command, int step) {
      if (deliveries.isEmpty()) {
        return;
      }
      int pick = pickOf(command);
      ModelDelivery d = deliveries.get(deliveries.size() - 1 - (pick % deliveries.size()));
      ModelMessage m = d.message;
      Outcome expected;
      if (d.finalizedByThis) {
        expected = Outcome.FINALIZED;
      } else if (m.state != State.LIVE || m.lease != d) {
        expected = Outcome.STALE;
      } else {
        expected = Outcome.OK;
      }
      boolean needsReplyTo = command instanceof Reply;
      Throwable thrown = null;
      try {
        apply(command, d.real);
      } catch (Throwable t) {
        thrown = t;
      }
      Statistics.label(EVENTS).collect(expected);
      String what = "step " + step + ": " + command + " through delivery " + d.real;
      if (needsReplyTo && !m.hasReplyTo) {
        // ReplyNotAvailable may be reported before or after the handle check.
        if (thrown instanceof ReplyNotAvailableException) {
          return;
        }
        assertThat(expected).as(what + " without reply-to must throw").isNotEqualTo(Outcome.OK);
      }
      switch (expected) {
        case FINALIZED -> assertThat(thrown).as(what).isInstanceOf(MessageFinalizedException.class);
        case STALE -> assertThat(thrown).as(what).isInstanceOf(ReceiptHandleExpiredException.class);
        case OK -> {
          if (thrown != null) {
            throw new AssertionError(what + " should succeed but threw " + thrown, thrown);
          }
          applyToModel(command, d);
        }
        default -> fail("unexpected outcome " + expected);
      }
    }

    private static int pickOf(Command c) {
      if (c instanceof Ack a) {
        return a.pick();
      } else if (c instanceof Nack n) {
        return n.pick();
      } else if (c instanceof Extend e) {
        return e.pick();
      } else if (c instanceof Reply r) {
        return r.pick();
      } else if (c instanceof ReplyAndAck r) {
        return r.pick();
      } else if (c instanceof DeadLetterCmd dl) {
        return dl.pick();
      } else if (c instanceof HandBack h) {
        return h.pick();
      } else if (c instanceof Checkpoint cp) {
        return cp.pick();
      }
      throw new IllegalArgumentException("not a delivery command: " + c);
    }

    private static void apply(Command c, Message<String, String> real) {
      if (c instanceof Ack) {
        real.acknowledge();
      } else if (c instanceof Nack n) {
        real.nack(Duration.ofSeconds(n.delaySeconds()));
      } else if (c instanceof Extend e) {
        real.extendVisibility(Duration.ofSeconds(e.seconds()));
      } else if (c instanceof Reply) {
        real.reply("reply-to-" + real.id());
      } else if (c instanceof ReplyAndAck) {
        real.replyAndAcknowledge("final-reply-to-" + real.id());
      } else if (c instanceof DeadLetterCmd) {
        real.deadLetter("model says so");
      } else if (c instanceof HandBack) {
        real.handBack();
      } else if (c instanceof Checkpoint) {
        real.checkpoint(("cp-" + real.receiptHandle()).getBytes(java.nio.charset.StandardCharsets.UTF_8));
      } else {
        throw new IllegalArgumentException("not a delivery command: " + c);
      }
    }

    private void applyToModel(Command c, ModelDelivery d) {
      ModelMessage m = d.message;
      Instant now = clock.instant();
      if (c instanceof Ack) {
        finalize(d, State.ACKED);
      } else if (c instanceof Nack n) {
        if (m.attempts >= MAX_ATTEMPTS) {
          Statistics.label(EVENTS).collect(NACK_DEAD_LETTER);
          finalize(d, State.DEAD);
          buried(m);
        } else {
          m.lease = null;
          m.visibleAt = now.plusSeconds(n.delaySeconds());
        }
      } else if (c instanceof HandBack) {
        m.lease = null;
        m.attempts--;
        m.visibleAt = now;
      } else if (c instanceof Checkpoint) {
        m.checkpoint = "cp-" + d.real.receiptHandle();
        checkpoints++;
      } else if (c instanceof Extend e) {
        Instant requested = now.plusSeconds(e.seconds());
        if (requested.isAfter(m.visibleAt)) {
          m.visibleAt = requested;
        }
      } else if (c instanceof Reply) {
        repliesSent++;
      } else if (c instanceof ReplyAndAck) {
        if (m.hasReplyTo) {
          repliesSent++;
        }
        finalize(d, State.ACKED);
      } else if (c instanceof DeadLetterCmd) {
        finalize(d, State.DEAD);
        buried(m);
      }
    }

    /** The model's side of a dead letter: recorded, and its requester owed an error reply. */
    private void buried(ModelMessage m) {
      deadIds.add(m.id);
      if (m.hasReplyTo) {
        errorReplyOwed.add(m.id);
        repliesSent++;
      }
    }

    private static void finalize(ModelDelivery d, State state) {
      d.message.state = state;
      d.message.lease = null;
      d.finalizedByThis = true;
    }

    void checkInvariants(Command command, int step) {
      reconcileDeadLetters("step " + step + " (" + command + ")");
      for (ModelMessage m : messages.values()) {
        assertThat(m.attempts)
            .as("step %d (%s): charged attempts of %s never exceed the budget", step, command, m.id)
            .isBetween(0, MAX_ATTEMPTS);
      }
      long live = messages.values().stream().filter(m -> m.state == State.LIVE).count();
      assertThat(mailbox.approximateCount())
          .as("step %d (%s): messages not yet finalized", step, command)
          .isEqualTo(live);
      assertThat(replies.approximateCount())
          .as("step %d (%s): replies sent", step, command)
          .isEqualTo(repliesSent);
    }

    /**
     * Checks that every dead letter the fixture reports is one the model allows: dead-lettered
     * explicitly, or a lease that expired at the delivery budget (which the model then finalizes).
     */
    private void reconcileDeadLetters(String where) {
      List<String> reported = fixture.deadLetteredIds(mailbox);
      assertThat(reported).as(where + ": dead letters are listed once each").doesNotHaveDuplicates();
      assertThat(reported).as(where + ": explicit dead letters are kept").containsAll(deadIds);
      Instant now = clock.instant();
      for (String id : reported) {
        if (deadIds.contains(id)) {
          continue;
        }
        ModelMessage m = messages.get(id);
        assertThat(m).as(where + ": dead letter %s was sent", id).isNotNull();
        if (!m.doomedAt(now)) {
          fail(
              where
                  + ": message "
                  + id
                  + " was dead-lettered but the model has it "
                  + m.state
                  + " with delivery count "
                  + m.deliveryCount
                  + ", lease "
                  + (m.lease != null)
                  + ", visible at "
                  + m.visibleAt
                  + " (now "
                  + now
                  + ")");
        }
        Statistics.label(EVENTS).collect(EXPIRY_DEAD_LETTER);
        m.state = State.DEAD;
        m.lease = null;
        buried(m);
      }
    }

    void drainAndCheckNothingLost() {
      clock.advance(Mailbox.MAX_VISIBILITY_TIMEOUT.plusHours(1));
      int guard = messages.size() + 2;
      while (true) {
        List<Message<String, String>> got = receive(10, Mailbox.MAX_VISIBILITY_TIMEOUT, -1);
        reconcileDeadLetters("drain");
        if (got.isEmpty()) {
          break;
        }
        for (Message<String, String> real : got) {
          real.acknowledge();
          messages.get(real.id()).state = State.ACKED;
          messages.get(real.id()).lease = null;
        }
        assertThat(--guard).as("drain terminates").isPositive();
      }
      for (ModelMessage m : messages.values()) {
        assertThat(m.state)
            .as("message %s (deliveries %d) is finalized or purged after the drain", m.id, m.deliveryCount)
            .isNotEqualTo(State.LIVE);
      }
      assertThat(mailbox.approximateCount()).as("nothing left after the drain").isZero();
      // Every dead-lettered request was answered once, with an error naming it.
      List<String> errorReplies = new ArrayList<>();
      List<Message<String, String>> got;
      while (!(got = replies.receive(10, Mailbox.MAX_VISIBILITY_TIMEOUT, Duration.ZERO)).isEmpty()) {
        for (Message<String, String> r : got) {
          if (r.errorReply().isPresent()) {
            errorReplies.add(r.errorReply().get().requestId());
            assertThat(r.inReplyTo()).hasValue(r.errorReply().get().requestId());
          } else {
            assertThat(r.inReplyTo()).as("a reply names its request").isPresent();
            assertThat(messages).containsKey(r.inReplyTo().get());
          }
          r.acknowledge();
        }
      }
      assertThat(errorReplies).containsExactlyInAnyOrderElementsOf(errorReplyOwed);
    }
  }
}
