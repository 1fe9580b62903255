package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

import dev.tether.test.SettableClock;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import net.jqwik.api.statistics.Statistics;

/**
 * Random operation sequences over {@link LeaseManager} (subclass per engine): enqueues of 0 to 4
 * KiB inputs, acquires, renewals, completions, failed releases and hand-backs through current,
 * stale and made-up tokens, with durations that are negative, zero, at the 12 h limit, past it and
 * absurdly large, and clock jumps that expire leases. After every step, against the table itself:
 *
 * <ul>
 *   <li>an invalid duration throws {@link IllegalArgumentException} and changes nothing;
 *   <li>an operation through a token that is not the item's current lease (stale after takeover,
 *       after hand-back, after finalization, or never issued) throws {@link LeaseLostException}
 *       or {@link ItemFinalizedException} and changes nothing (row and checkpoints byte for byte);
 *   <li>an operation through the current token succeeds, even after the lease expired, until the
 *       item is taken over;
 *   <li>tokens are never reused, delivery counts never decrease, no row vanishes, an item is
 *       completed at most once and a finished item never changes again;
 * </ul>
 *
 * and at the end, with the clock past every lease, a drain leaves every item {@code completed}
 * or {@code failed} with its input intact.
 */
abstract class LeaseManagerPropertyCompatibilityTest {
  private static final AtomicLong QUEUES = new AtomicLong();
  static final List<Duration> DURATIONS = List.of(
      Duration.ofNanos(-1), Duration.ofSeconds(-30), Duration.ZERO, Duration.ofSeconds(1),
      Duration.ofSeconds(30), AcquireRequest.MAX_LEASE, AcquireRequest.MAX_LEASE.plusMillis(1),
      Duration.ofDays(365 * 1000L), Duration.ofSeconds(Long.MAX_VALUE));

  private static TestDatabase db;
  private static TetherStore store;
  private static SettableClock clock;

  /** Opens the shared database for the subclass's engine. */
  static void open(TestDatabase database) {
    db = database;
    clock = new SettableClock(Instant.parse("2026-03-01T10:00:00Z"));
    store = db.open(TetherStoreConfig.builder().clock(clock).maximumPoolSize(4).build());
  }

  @AfterContainer
  static void closeDatabase() {
    if (store != null) {
      store.close();
    }
    if (db != null) {
      db.close();
    }
  }

  sealed interface Op permits Enqueue, Acquire, Renew, Complete, Fail, HandBack, Advance {}

  record Enqueue(int size, int maxAttempts) implements Op {}

  record Acquire(Duration d, int max) implements Op {}

  /** {@code pick} selects an item; {@code tokenPick} one of its tokens ever issued (or a made-up one). */
  record Renew(int pick, int tokenPick, Duration d) implements Op {}

  record Complete(int pick, int tokenPick, int outputSize) implements Op {}

  record Fail(int pick, int tokenPick) implements Op {}

  record HandBack(int pick, int tokenPick, Duration d) implements Op {}

  record Advance(Duration d) implements Op {}

  @Provide
  Arbitrary<List<Op>> ops() {
    Arbitrary<Integer> pick = Arbitraries.integers().between(0, 7);
    Arbitrary<Integer> tok = Arbitraries.frequency(
        net.jqwik.api.Tuple.of(8, 0), net.jqwik.api.Tuple.of(2, 1), net.jqwik.api.Tuple.of(1, 2),
        net.jqwik.api.Tuple.of(1, 5));
    Arbitrary<Duration> dur = Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(5, Arbitraries.of(DURATIONS.stream().filter(d -> valid(d)).toList())),
        net.jqwik.api.Tuple.of(1, Arbitraries.of(DURATIONS.stream().filter(d -> !valid(d)).toList())));
    return Arbitraries.frequencyOf(
            net.jqwik.api.Tuple.of(5, Combinators.combine(
                Arbitraries.of(0, 1, 17, 4096), Arbitraries.integers().between(1, 3)).as(Enqueue::new)),
            net.jqwik.api.Tuple.of(6, Combinators.combine(dur, Arbitraries.integers().between(1, 3)).as(Acquire::new)),
            net.jqwik.api.Tuple.of(4, Combinators.combine(pick, tok, dur).as(Renew::new)),
            net.jqwik.api.Tuple.of(4, Combinators.combine(pick, tok, Arbitraries.of(0, 5, 2048)).as(Complete::new)),
            net.jqwik.api.Tuple.of(3, Combinators.combine(pick, tok).as(Fail::new)),
            net.jqwik.api.Tuple.of(2, Combinators.combine(pick, tok, dur).as(HandBack::new)),
            net.jqwik.api.Tuple.of(3, Arbitraries.of(Duration.ofSeconds(1), Duration.ofSeconds(31),
                Duration.ofHours(13)).map(Advance::new)))
        .map(o -> (Op) o)
        .list().ofMinSize(10).ofMaxSize(45)
        .map(list -> {
          List<Op> withItems = new ArrayList<>(List.of(new Enqueue(3, 2), new Enqueue(0, 3)));
          withItems.addAll(list);
          return withItems;
        });
  }

  @Property(tries = 80)
  void randomOperationsWithStaleTokensAndBadDurationsKeepEveryInvariant(@ForAll("ops") List<Op> ops)
      throws Exception {
    String queue = "prop-" + QUEUES.incrementAndGet();
    LeaseManager lm = new LeaseManager(store, "w-" + queue);
    List<Long> ids = new ArrayList<>();
    Map<Long, byte[]> inputs = new HashMap<>();
    Map<Long, List<Long>> tokens = new HashMap<>();
    Set<Long> allTokens = new HashSet<>();
    Map<Long, Integer> lastDelivery = new HashMap<>();
    for (Op op : ops) {
      Map<Long, Row> before = snapshot(queue);
      String outcome = apply(lm, queue, op, ids, inputs, tokens, allTokens, before);
      Statistics.label("outcome").collect(outcome);
      Map<Long, Row> after = snapshot(queue);
      assertThat(after.keySet()).as("no row vanished after %s", op).containsAll(before.keySet());
      for (Map.Entry<Long, Row> e : after.entrySet()) {
        Row a = e.getValue();
        Row b = before.get(e.getKey());
        assertThat(a.deliveryCount()).as("delivery count never decreases").isGreaterThanOrEqualTo(
            lastDelivery.getOrDefault(e.getKey(), 0));
        lastDelivery.put(e.getKey(), a.deliveryCount());
        assertThat(a.attempts())
            .as("charged attempts of item %d never exceed its budget, after %s", e.getKey(), op)
            .isBetween(0, a.maxAttempts());
        if (b != null && (b.status().equals("completed") || b.status().equals("failed"))
            && !(op instanceof Acquire)) {
          assertThat(a).as("a finished item never changes (%s)", op).isEqualTo(b);
        }
        if (b != null && b.status().equals("completed")) {
          assertThat(a).as("a completed item never changes (%s)", op).isEqualTo(b);
        }
      }
      if (outcome.startsWith("refused") || outcome.startsWith("invalid")) {
        assertThat(after).as("a refused operation (%s: %s) changes nothing", op, outcome).isEqualTo(before);
      }
    }
    Statistics.label("outcome").coverage(cov -> {
      cov.check("ok Complete").count(n -> n >= 20);
      cov.check("ok Renew").count(n -> n >= 20);
      cov.check("ok HandBack").count(n -> n >= 5);
      cov.check("refused LeaseConflictException").count(n -> n >= 10);
      cov.check("refused LeaseExpiredException").count(n -> n >= 20);
      cov.check("refused ItemFinalizedException").count(n -> n >= 10);
      cov.check("invalid duration").count(n -> n >= 20);
    });
    // Nothing lost: past every lease and backoff, drain the queue.
    clock.advance(Duration.ofDays(2));
    int guard = 0;
    List<Lease> got;
    while (!(got = lm.acquire(AcquireRequest.batch(queue, Duration.ofMinutes(1), 10))).isEmpty()) {
      for (Lease l : got) {
        assertThat(l.input() == null ? new byte[0] : l.input()).as("input of item %d intact", l.itemId())
            .isEqualTo(inputs.get(l.itemId()));
        lm.complete(l.itemId(), l.token(), null);
      }
      assertThat(++guard).as("drain terminates").isLessThan(100);
    }
    Map<Long, Row> end = snapshot(queue);
    assertThat(end.keySet()).containsExactlyInAnyOrderElementsOf(ids);
    assertThat(end.values()).extracting(Row::status).allMatch(s -> s.equals("completed") || s.equals("failed"));
  }

  private String apply(LeaseManager lm, String queue, Op op, List<Long> ids, Map<Long, byte[]> inputs,
      Map<Long, List<Long>> tokens, Set<Long> allTokens, Map<Long, Row> before) {
    if (op instanceof Enqueue e) {
      byte[] input = new byte[e.size()];
      new java.util.Random(e.size() * 31L + ids.size()).nextBytes(input);
      long id = lm.enqueue(NewWorkItem.builder(queue).input(input).maxAttempts(e.maxAttempts()).build());
      assertThat(ids).doesNotContain(id);
      ids.add(id);
      inputs.put(id, input);
      tokens.put(id, new ArrayList<>());
      return "enqueued";
    }
    if (op instanceof Advance a) {
      clock.advance(a.d());
      return "advanced";
    }
    if (op instanceof Acquire a) {
      if (!valid(a.d())) {
        assertThatThrownBy(() -> lm.acquire(AcquireRequest.batch(queue, a.d(), a.max())))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("leaseDuration");
        return "invalid duration";
      }
      List<Lease> leases = lm.acquire(AcquireRequest.batch(queue, a.d(), a.max()));
      for (Lease l : leases) {
        assertThat(allTokens.add(l.token())).as("token %d never reused", l.token()).isTrue();
        tokens.get(l.itemId()).add(l.token());
        Row was = before.get(l.itemId());
        assertThat(was.status()).isIn("pending", "in_progress");
        assertThat(l.deliveryCount()).isEqualTo(was.deliveryCount() + 1);
        assertThat(l.attempt()).as("a delivery is charged, within the budget")
            .isEqualTo(was.attempts() + 1).isLessThanOrEqualTo(l.maxAttempts());
      }
      return leases.isEmpty() ? "acquired nothing" : "acquired";
    }
    int pick;
    int tokenPick;
    if (op instanceof Renew r) {
      pick = r.pick();
      tokenPick = r.tokenPick();
    } else if (op instanceof Complete c) {
      pick = c.pick();
      tokenPick = c.tokenPick();
    } else if (op instanceof Fail f) {
      pick = f.pick();
      tokenPick = f.tokenPick();
    } else {
      HandBack h = (HandBack) op;
      pick = h.pick();
      tokenPick = h.tokenPick();
    }
    if (ids.isEmpty()) {
      return "no item";
    }
    long id = ids.get(pick % ids.size());
    List<Long> issued = tokens.get(id);
    // Most picks name an issued token (the current one or a stale one); the rest a made-up one.
    long token = issued.isEmpty() || tokenPick == 5
        ? 0x5eed_0000_0000_0000L + tokenPick : issued.get(issued.size() - 1 - (tokenPick % issued.size()));
    Row row = before.get(id);
    boolean current = row.status().equals("in_progress") && row.token() != null && row.token() == token;
    Runnable call;
    Duration d = null;
    if (op instanceof Renew r) {
      d = r.d();
      call = () -> lm.renew(id, token, r.d());
    } else if (op instanceof Complete c) {
      byte[] out = new byte[c.outputSize()];
      call = () -> lm.complete(id, token, out);
    } else if (op instanceof Fail) {
      call = () -> lm.release(id, token, false, null, "failed by the property test");
    } else {
      HandBack h = (HandBack) op;
      d = h.d();
      call = () -> lm.handBack(id, token, h.d());
    }
    if (d != null && !valid(d)) {
      assertThatThrownBy(call::run).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(d.toString());
      return "invalid duration";
    }
    if (current) {
      call.run();
      return "ok " + op.getClass().getSimpleName();
    }
    try {
      call.run();
      fail("%s through token %d of item %d (row %s) was accepted", op, token, id, row);
      return "impossible";
    } catch (LeaseLostException | ItemFinalizedException e) {
      assertThat(e.getMessage()).contains(String.valueOf(id));
      return "refused " + e.getClass().getSimpleName();
    }
  }

  private static boolean valid(Duration d) {
    return !d.isNegative() && d.compareTo(AcquireRequest.MAX_LEASE) <= 0;
  }

  /** One row and its checkpoints, compared by value. */
  record Row(String status, Long token, int deliveryCount, int attempts, int maxAttempts,
      String columns, int checkpoints) {}

  private static Map<Long, Row> snapshot(String queue) throws SQLException {
    Map<Long, Row> out = new HashMap<>();
    try (Connection c = store.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(
            "SELECT w.*, (SELECT COUNT(*) FROM tether_work_item_checkpoints k WHERE k.item_id = w.id) AS cps"
                + " FROM tether_work_items w WHERE queue = ? ORDER BY id")) {
      ps.setString(1, queue);
      try (ResultSet rs = ps.executeQuery()) {
        ResultSetMetaData md = rs.getMetaData();
        while (rs.next()) {
          StringBuilder cols = new StringBuilder();
          for (int i = 1; i <= md.getColumnCount(); i++) {
            Object v = rs.getObject(i);
            cols.append(md.getColumnLabel(i)).append('=')
                .append(v instanceof byte[] b ? Arrays.toString(b) : String.valueOf(v)).append(';');
          }
          long tok = rs.getLong("lease_token");
          Long token = rs.wasNull() ? null : tok;
          out.put(rs.getLong("id"), new Row(rs.getString("status"), token, rs.getInt("delivery_count"),
              rs.getInt("attempts"), rs.getInt("max_attempts"), cols.toString(), rs.getInt("cps")));
        }
      }
    }
    return out;
  }

}
