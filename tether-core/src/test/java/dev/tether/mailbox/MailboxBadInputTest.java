package dev.tether.mailbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tether.test.SettableClock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
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
import net.jqwik.api.statistics.Statistics;

/**
 * Bad input through the {@link Mailbox} API, shared by every implementation (subclass with a
 * {@link MailboxFixture}): random sequences of sends of odd bodies (empty, unicode, quotes, SQL
 * fragments, {@code %}, NUL, 64 KiB), receives with out-of-range {@code maxMessages}, negative,
 * zero, limit, past-limit and absurd visibility timeouts and wait times, nacks and extensions with
 * bad durations, and duplicate or stale acknowledgements. Checked after each step: a bad parameter
 * throws {@link InvalidParameterException} (a {@link MailboxException}) and changes nothing (the
 * count stays, the handle stays usable); a second acknowledgement throws {@link
 * MessageFinalizedException}, a stale one {@link ReceiptHandleExpiredException}; and at the end
 * every message sent was either acknowledged once or is received again with its body verbatim.
 */
public abstract class MailboxBadInputTest {
  static final List<String> BODIES = List.of(
      "", " ", "plain", "héllo wörld ✓ 日本語 🎉", "'; DROP TABLE tether_work_items; --", "\" OR \"1\"=\"1",
      "100% _done_ \\ \\\\", "a\u0000b", "line\r\nbreak", "x".repeat(64 * 1024),
      "Robert'); DELETE FROM tether_work_item_checkpoints;--", "$$ LANGUAGE plpgsql; $$");
  static final List<Duration> DURATIONS = List.of(
      Duration.ofNanos(-1), Duration.ofSeconds(-5), Duration.ZERO, Duration.ofSeconds(30),
      Mailbox.MAX_VISIBILITY_TIMEOUT, Mailbox.MAX_VISIBILITY_TIMEOUT.plusNanos(1),
      Duration.ofDays(100_000), Duration.ofSeconds(Long.MAX_VALUE, 999_999_999));

  /**
   * Creates a fresh fixture; called once per try, closed at its end.
   *
   * @return the fixture
   */
  protected abstract MailboxFixture createFixture();

  sealed interface Op permits Send, Receive, Nack, Extend, Ack, Advance {}

  record Send(String body) implements Op {}

  record Receive(int max, Duration visibility, Duration waitTime) implements Op {}

  record Nack(int pick, Duration d) implements Op {}

  record Extend(int pick, Duration d) implements Op {}

  record Ack(int pick) implements Op {}

  record Advance(Duration d) implements Op {}

  /**
   * The generated operation sequences.
   *
   * @return the arbitrary
   */
  @Provide
  public Arbitrary<List<Op>> ops() {
    Arbitrary<Integer> pick = Arbitraries.integers().between(0, 9);
    Arbitrary<Duration> dur = Arbitraries.of(DURATIONS);
    Arbitrary<Op> send = Arbitraries.of(BODIES).map(Send::new);
    Arbitrary<Op> receive = Combinators.combine(
            Arbitraries.of(-1, 0, 1, 3, 10, 11, Integer.MAX_VALUE, Integer.MIN_VALUE), dur,
            Arbitraries.of(Duration.ZERO, Duration.ZERO, Duration.ofMillis(-1),
                Mailbox.MAX_WAIT_TIME.plusNanos(1), Duration.ofDays(1)))
        .as(Receive::new);
    Arbitrary<Op> goodReceive = Combinators.combine(Arbitraries.integers().between(1, 10),
            Arbitraries.of(Duration.ZERO, Duration.ofSeconds(30), Mailbox.MAX_VISIBILITY_TIMEOUT),
            Arbitraries.just(Duration.ZERO))
        .as(Receive::new);
    Arbitrary<Op> nack = Combinators.combine(pick, dur).as(Nack::new);
    Arbitrary<Op> extend = Combinators.combine(pick, dur).as(Extend::new);
    Arbitrary<Op> ack = pick.map(Ack::new);
    Arbitrary<Op> advance = Arbitraries.of(Duration.ofSeconds(10), Duration.ofSeconds(31),
        Duration.ofHours(13)).map(Advance::new);
    return Arbitraries.frequencyOf(
            Tuple.of(5, send), Tuple.of(5, receive), Tuple.of(5, goodReceive), Tuple.of(3, nack), Tuple.of(3, extend),
            Tuple.of(4, ack), Tuple.of(2, advance))
        .list().ofMinSize(10).ofMaxSize(40)
        .map(list -> {
          List<Op> out = new ArrayList<>(List.of(new Send("first"), new Send("")));
          out.addAll(list);
          return out;
        });
  }

  /**
   * The property.
   *
   * @param ops the operations
   */
  @Property(tries = 80)
  public void badParametersAreRejectedWithoutChangingAnything(@ForAll("ops") List<Op> ops) {
    SettableClock clock = new SettableClock(Instant.parse("2026-03-01T10:00:00Z"));
    try (MailboxFixture fixture = createFixture()) {
      Mailbox<String, String> mailbox = fixture.create("bad-input", new MailboxSpec(clock, 1000, 0));
      Map<String, String> sent = new HashMap<>();
      Set<String> acked = new HashSet<>();
      List<Message<String, String>> handles = new ArrayList<>();
      for (Op op : ops) {
        long countBefore = mailbox.approximateCount();
        String outcome = apply(mailbox, clock, op, sent, acked, handles);
        Statistics.label("outcome").collect(outcome);
        if (outcome.startsWith("invalid") || outcome.startsWith("refused")) {
          assertThat(mailbox.approximateCount()).as("%s changed nothing", op).isEqualTo(countBefore);
        }
      }
      clock.advance(Duration.ofHours(13));
      Set<String> remaining = new HashSet<>();
      List<Message<String, String>> got;
      while (!(got = mailbox.receive(10, Duration.ofMinutes(1), Duration.ZERO)).isEmpty()) {
        for (Message<String, String> m : got) {
          assertThat(m.body()).as("body of %s verbatim", m.id()).isEqualTo(sent.get(m.id()));
          assertThat(remaining.add(m.id())).as("received once in the final drain").isTrue();
          m.acknowledge();
        }
      }
      assertThat(remaining).noneMatch(acked::contains);
      Set<String> all = new HashSet<>(remaining);
      all.addAll(acked);
      assertThat(all).as("every message acknowledged once or still there").isEqualTo(sent.keySet());
    }
    Statistics.label("outcome").coverage(cov -> {
      cov.check("invalid receive").count(n -> n >= 50);
      cov.check("invalid nack").count(n -> n >= 5);
      cov.check("invalid extend").count(n -> n >= 5);
      cov.check("acked").count(n -> n >= 20);
      cov.check("refused MessageFinalizedException").count(n -> n >= 10);
    });
  }

  private static String apply(Mailbox<String, String> mailbox, SettableClock clock, Op op,
      Map<String, String> sent, Set<String> acked, List<Message<String, String>> handles) {
    if (op instanceof Send s) {
      String id = mailbox.send(s.body());
      assertThat(sent.put(id, s.body())).isNull();
      return "sent";
    }
    if (op instanceof Advance a) {
      clock.advance(a.d());
      return "advanced";
    }
    if (op instanceof Receive r) {
      boolean ok = r.max() >= 1 && r.max() <= Mailbox.MAX_MESSAGES_PER_RECEIVE
          && valid(r.visibility(), Mailbox.MAX_VISIBILITY_TIMEOUT) && valid(r.waitTime(), Mailbox.MAX_WAIT_TIME);
      if (!ok) {
        assertThatThrownBy(() -> mailbox.receive(r.max(), r.visibility(), r.waitTime()))
            .isInstanceOf(InvalidParameterException.class)
            .isInstanceOf(MailboxException.class)
            .hasMessageContaining(" was ");
        return "invalid receive";
      }
      List<Message<String, String>> got = mailbox.receive(r.max(), r.visibility(), r.waitTime());
      for (Message<String, String> m : got) {
        assertThat(m.body()).isEqualTo(sent.get(m.id()));
        assertThat(acked).doesNotContain(m.id());
      }
      handles.addAll(got);
      return got.isEmpty() ? "received nothing" : "received";
    }
    if (handles.isEmpty()) {
      return "no handle";
    }
    int pick = op instanceof Nack n ? n.pick() : op instanceof Extend e ? e.pick() : ((Ack) op).pick();
    Message<String, String> m = handles.get(handles.size() - 1 - pick % handles.size());
    if (op instanceof Nack n && !valid(n.d(), Mailbox.MAX_VISIBILITY_TIMEOUT)) {
      Duration d = n.d();
      assertThatThrownBy(() -> m.nack(d)).isInstanceOf(InvalidParameterException.class)
          .hasMessageContaining(d.toString());
      return "invalid nack";
    }
    if (op instanceof Extend e && !valid(e.d(), Mailbox.MAX_VISIBILITY_TIMEOUT)) {
      Duration d = e.d();
      assertThatThrownBy(() -> m.extendVisibility(d)).isInstanceOf(InvalidParameterException.class)
          .hasMessageContaining(d.toString());
      return "invalid extend";
    }
    try {
      if (op instanceof Nack n) {
        m.nack(n.d());
        return "nacked";
      }
      if (op instanceof Extend e) {
        m.extendVisibility(e.d());
        return "extended";
      }
      m.acknowledge();
      assertThat(acked.add(m.id())).as("message %s acknowledged only once", m.id()).isTrue();
      return "acked";
    } catch (MessageFinalizedException | ReceiptHandleExpiredException e) {
      return "refused " + e.getClass().getSimpleName();
    }
  }

  private static boolean valid(Duration d, Duration max) {
    return !d.isNegative() && d.compareTo(max) <= 0;
  }
}
