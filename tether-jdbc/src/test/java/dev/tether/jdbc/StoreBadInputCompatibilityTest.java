package dev.tether.jdbc;

import dev.tether.Codec;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.tether.QueueName;
import dev.tether.mailbox.Message;
import dev.tether.mailbox.SerializationException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Hostile and malformed input through every string and byte input of the store API (subclass per
 * engine): SQL injection attempts that must round-trip verbatim and leave the tables intact, queue
 * names outside the {@link QueueName} rule that must be refused before anything is written, and
 * payloads at and past the size limits that must be refused with nothing written.
 */
abstract class StoreBadInputCompatibilityTest extends StoreTestBase {
  /** Classic injection payloads for both engines, plus LIKE wildcards, NUL-free control and unicode. */
  static final List<String> INJECTIONS = List.of(
      "'; DROP TABLE tether_work_items; --",
      "x' OR '1'='1",
      "\"; DELETE FROM tether_work_item_checkpoints; --",
      "1; UPDATE tether_work_items SET status = 'completed' --",
      "') ON CONFLICT DO NOTHING; DROP TABLE tether_schema_version; --",
      "$$; DROP SCHEMA public CASCADE; $$",
      "%", "_", "%_%", "\\", "\\'; --", "' || (SELECT current_user) || '",
      "Robert'); DROP TABLE tether_work_items;--",
      "null", "NULL", "héllo ✓ 日本語 🎉", "tab\tnew\nline\r",
      "x".repeat(10_000));

  /** Queue names that break the rule, each a different way. */
  static final List<String> BAD_NAMES = List.of(
      "", " ", " q", "q ", "-q", ".q", "_q", ":q", "q/x", "q x", "q'x", "q\"x", "q%", "q_%", "q;",
      "q'; DROP TABLE tether_work_items; --", "é", "q\u0000", "q\n", "日本", "q".repeat(129),
      "q\u200b", "Ｑ");

  /** Names that follow the rule, edge cases included. */
  static final List<String> GOOD_NAMES = List.of(
      "q", "0", "Q9", "a.b", "a_b", "a:b", "a-b", "a.b_c:d-e", "x".repeat(128), "9-lives", "q--");

  @Test
  void injectionAttemptsThroughEveryStringInputRoundTripVerbatimAndLeaveTheTablesIntact() throws Exception {
    int tablesBefore = tableCount();
    List<Long> ids = new ArrayList<>();
    int i = 0;
    for (String evil : INJECTIONS) {
      i++;
      String queue = "inj-" + i;
      LeaseManager lm = new LeaseManager(store, evil); // worker id = lease holder
      long id = lm.enqueue(NewWorkItem.builder(queue).input(evil).taskId(evil).workType(evil)
          .idempotencyKey(evil).replyTo("reply-" + i).build());
      ids.add(id);
      assertThat(lm.enqueue(NewWorkItem.builder(queue).input("other").idempotencyKey(evil).build()))
          .as("same idempotency key, same item").isEqualTo(id);
      // Filters match the exact string only: a wildcard or a quote never widens them.
      assertThat(lm.acquire(new AcquireRequest(queue, Duration.ofMinutes(1), 10, evil + "x", null))).isEmpty();
      assertThat(lm.acquire(new AcquireRequest(queue, Duration.ofMinutes(1), 10, null, evil + "x"))).isEmpty();
      Lease lease = lm.acquire(new AcquireRequest(queue, Duration.ofMinutes(1), 10, evil, evil)).get(0);
      assertThat(lease.itemId()).isEqualTo(id);
      assertThat(new String(lease.input(), StandardCharsets.UTF_8)).isEqualTo(evil);
      lm.release(id, lease.token(), false, null, evil); // error message
      assertThat(lm.find(id).orElseThrow().errorMessage()).isEqualTo(evil);
      clock.advance(Duration.ofMinutes(10));
      Lease again = lm.acquire(queue, Duration.ofMinutes(1)).orElseThrow();
      lm.release(id, again.token(), true, evil, null); // output
      WorkItem item = lm.find(id).orElseThrow();
      assertThat(item.status()).isEqualTo(WorkStatus.COMPLETED);
      assertThat(item.taskId()).isEqualTo(evil);
      assertThat(item.workType()).isEqualTo(evil);
      assertThat(item.idempotencyKey()).isEqualTo(evil);
      assertThat(item.leaseHolder()).isEqualTo(evil);
      assertThat(item.errorMessage()).as("cleared on completion").isNull();
      assertThat(new String(item.input(), StandardCharsets.UTF_8)).isEqualTo(evil);
      assertThat(new String(item.output(), StandardCharsets.UTF_8)).isEqualTo(evil);
      assertThat(item.checkpoints()).singleElement().satisfies(c -> {
        assertThat(c.leaseHolder()).isEqualTo(evil);
        assertThat(c.reason()).startsWith(evil);
      });
    }
    // Codec bodies, replies and the mailbox holder name through JdbcMailbox.
    JdbcMailbox<String, String> replies = JdbcMailbox.ofStrings(store, "inj-replies");
    JdbcMailbox<String, String> requests = JdbcMailbox.builder(store, "inj-requests", Codec.utf8(),
        Codec.utf8()).holder(INJECTIONS.get(0)).build();
    for (String evil : INJECTIONS) {
      requests.send(evil, replies);
      Message<String, String> m = requests.receive(1, Duration.ofMinutes(1), Duration.ZERO).get(0);
      assertThat(m.body()).isEqualTo(evil);
      m.replyAndAcknowledge(evil);
      assertThat(replies.receive(1, Duration.ofMinutes(1), Duration.ZERO).get(0).body()).isEqualTo(evil);
    }
    assertThat(tableCount()).as("no table dropped or created").isEqualTo(tablesBefore);
    try (Connection c = store.dataSource().getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*), SUM(CASE WHEN status = 'completed' THEN 1 ELSE 0 END)"
            + " FROM tether_work_items")) {
      rs.next();
      assertThat(rs.getLong(1)).as("rows: one per item, request and reply").isEqualTo(INJECTIONS.size() * 3L);
      assertThat(rs.getLong(2)).as("completed: items and requests; replies received, not acked")
          .isEqualTo(INJECTIONS.size() * 2L);
    }
  }

  @Test
  void queueNamesBreakingTheRuleAreRefusedAtEveryEntryPointBeforeAnythingIsWritten() throws Exception {
    LeaseManager lm = new LeaseManager(store, "w");
    for (String bad : BAD_NAMES) {
      List<Runnable> entryPoints = List.of(
          () -> NewWorkItem.builder(bad),
          () -> NewWorkItem.of(bad, "x"),
          () -> NewWorkItem.builder("ok").replyTo(bad),
          () -> AcquireRequest.one(bad, Duration.ofMinutes(1)),
          () -> lm.acquire(bad, Duration.ofMinutes(1)),
          () -> lm.redriveAll(bad),
          () -> JdbcMailbox.ofStrings(store, bad),
          () -> JdbcMailbox.builder(store, bad, Codec.utf8(), Codec.utf8()));
      for (int k = 0; k < entryPoints.size(); k++) {
        Runnable call = entryPoints.get(k);
        assertThat(catchThrowable(call::run)).as("entry point %d, name %s", k, QueueNameDescribe.of(bad))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining(QueueName.REGEX)
            .hasMessageNotContaining("\n");
      }
    }
    assertThat(rowCount()).isZero();
    for (String good : GOOD_NAMES) {
      long id = lm.enqueue(NewWorkItem.builder(good).replyTo(good).input("x").build());
      Lease l = lm.acquire(good, Duration.ofMinutes(1)).orElseThrow();
      assertThat(l.itemId()).isEqualTo(id);
      assertThat(l.queue()).isEqualTo(good);
      assertThat(l.replyTo()).isEqualTo(good);
      lm.complete(id, l.token(), null);
    }
  }

  @Test
  void mailboxBodiesFromZeroBytesToTheLimitAreStoredAndOneByteMoreIsRefusedWithNothingWritten()
      throws Exception {
    int max = 1024;
    JdbcMailbox<byte[], byte[]> box = JdbcMailbox.builder(store, "sizes", Codec.bytes(), Codec.bytes())
        .maxBodyBytes(max).build();
    JdbcMailbox<byte[], byte[]> replies = JdbcMailbox.builder(store, "sizes-replies", Codec.bytes(),
        Codec.bytes()).maxBodyBytes(max).build();
    for (int size : new int[] {0, 1, max - 1, max}) {
      byte[] body = new byte[size];
      Arrays.fill(body, (byte) 0xff);
      box.send(body, replies);
      Message<byte[], byte[]> m = box.receive(1, Duration.ofMinutes(1), Duration.ZERO).get(0);
      assertThat(m.body()).isEqualTo(body);
      // A reply over the limit is refused, and the message stays held (not acknowledged).
      assertThatThrownBy(() -> m.replyAndAcknowledge(new byte[max + 1]))
          .isInstanceOf(SerializationException.class)
          .hasMessageContaining((max + 1) + " bytes").hasMessageContaining("nothing was written");
      m.replyAndAcknowledge(body);
      assertThat(replies.receive(1, Duration.ofMinutes(1), Duration.ZERO).get(0).body()).isEqualTo(body);
    }
    long rows = rowCount();
    for (int size : new int[] {max + 1, 10 * max, JdbcMailbox.DEFAULT_MAX_BODY_BYTES + 1}) {
      assertThatThrownBy(() -> box.send(new byte[size]))
          .isInstanceOf(SerializationException.class)
          .hasMessageContaining(size + " bytes").hasMessageContaining("limit of " + max);
    }
    // UTF-8 text counts encoded bytes: 342 three-byte characters are 1026 bytes.
    JdbcMailbox<String, String> text = JdbcMailbox.builder(store, "sizes-text", Codec.utf8(), Codec.utf8())
        .maxBodyBytes(max).build();
    assertThatThrownBy(() -> text.send("€".repeat(342))).isInstanceOf(SerializationException.class);
    assertThatThrownBy(() -> text.send("\ud800 unpaired surrogate")).isInstanceOf(SerializationException.class)
        .hasMessageContaining("nothing was written");
    text.send("€".repeat(341)); // 1023 bytes: fits
    assertThat(rowCount()).as("only the last send wrote").isEqualTo(rows + 1);
  }

  @Test
  void leaseManagerInputsAndOutputsPastTheLimitAreRefusedWithNothingWritten() throws Exception {
    LeaseManager lm = new LeaseManager(store, "w");
    long empty = lm.enqueue(NewWorkItem.builder("data").input(new byte[0]).build());
    Lease l = lm.acquire("data", Duration.ofMinutes(1)).orElseThrow();
    assertThat(l.itemId()).isEqualTo(empty);
    assertThat(l.input()).isEmpty();
    byte[] tooBig = new byte[NewWorkItem.MAX_DATA_BYTES + 1];
    assertThatThrownBy(() -> NewWorkItem.builder("data").input(tooBig))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(String.valueOf(NewWorkItem.MAX_DATA_BYTES + 1))
        .hasMessageContaining("nothing was written");
    assertThatThrownBy(() -> lm.complete(empty, l.token(), tooBig))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("output of item " + empty);
    WorkItem item = lm.find(empty).orElseThrow();
    assertThat(item.status()).as("still held after the refused completion").isEqualTo(WorkStatus.IN_PROGRESS);
    assertThat(rowCount()).isEqualTo(1);
    lm.complete(empty, l.token(), new byte[0]);
    assertThat(lm.find(empty).orElseThrow().output()).isEmpty();
  }

  private long rowCount() throws SQLException {
    try (Connection c = store.dataSource().getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM tether_work_items")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private int tableCount() throws SQLException {
    // The store's own schema only: other tests' schemas come and go on a shared server.
    try (Connection c = store.dataSource().getConnection();
        ResultSet rs = c.getMetaData().getTables(null, c.getSchema(), "%", new String[] {"TABLE"})) {
      int n = 0;
      List<String> names = new ArrayList<>();
      while (rs.next()) {
        names.add(rs.getString("TABLE_NAME"));
        n++;
      }
      assertThat(names).contains("tether_work_items", "tether_work_item_checkpoints", "tether_schema_version");
      return n;
    }
  }

  /** Shows a name in assertion descriptions without raw control characters. */
  static final class QueueNameDescribe {
    static String of(String s) {
      StringBuilder sb = new StringBuilder();
      s.codePoints().limit(40).forEach(cp -> sb.append(cp >= 0x20 && cp < 0x7f ? Character.toString(cp)
          : String.format("\\u%04x", cp)));
      return sb.toString();
    }

  }
}
