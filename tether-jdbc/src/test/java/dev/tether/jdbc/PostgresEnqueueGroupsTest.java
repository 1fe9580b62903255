package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.Codec;
import dev.tether.mailbox.Message;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * Group commit of concurrent single enqueues on PostgreSQL ({@link EnqueueGroups}): every caller
 * gets the id of its own item, all items are durable, a group notifies other processes' stores,
 * a failing item fails only its own call, and a lone enqueue is written alone.
 */
class PostgresEnqueueGroupsTest {
  private PostgresTestSchema schema;
  private TetherStore store;

  @BeforeEach
  void open() {
    schema = new PostgresTestSchema("tether_enqg_");
    store = TetherStore.open(schema.url());
  }

  @AfterEach
  void close() {
    store.close();
    schema.close();
  }

  private EnqueueGroups groups() {
    return ((PostgresEngine) store.storeEngine()).enqueueGroups();
  }

  /** The stored input, priority, scheduled flag, created_at and reply_of of an item. */
  private record Row(String input, int priority, boolean scheduled, Instant createdAt, Long replyOf, boolean errorReply) {}

  private Row row(long id) throws Exception {
    try (Connection c = store.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT input_data, priority, scheduled, created_at, reply_of,"
            + " reply_error FROM tether_work_items WHERE id = ?")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as("item %d exists", id).isTrue();
        long replyOf = rs.getLong(5);
        Long reply = rs.wasNull() ? null : replyOf;
        return new Row(new String(rs.getBytes(1), StandardCharsets.UTF_8), rs.getInt(2), rs.getBoolean(3),
            rs.getObject(4, OffsetDateTime.class).toInstant(), reply, rs.getBoolean(6));
      }
    }
  }

  private long count() throws Exception {
    try (Connection c = store.dataSource().getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM tether_work_items")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void concurrentSingleEnqueuesEachReturnTheIdOfTheirOwnItemAndShareGroups() throws Exception {
    int threads = 16;
    int each = 40;
    LeaseManager producer = new LeaseManager(store, "producer");
    Map<Long, String> sent = new ConcurrentHashMap<>();
    CyclicBarrier start = new CyclicBarrier(threads);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int thread = t;
        done.add(pool.submit(() -> {
          start.await();
          for (int i = 0; i < each; i++) {
            String body = "t" + thread + "-" + i;
            long id = producer.enqueue(NewWorkItem.builder("q").input(body).priority(i % 7).build());
            assertThat(sent.put(id, body)).as("id %d returned twice", id).isNull();
          }
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(sent).hasSize(threads * each);
    assertThat(count()).isEqualTo(threads * each);
    for (Map.Entry<Long, String> e : sent.entrySet()) {
      Row r = row(e.getKey());
      assertThat(r.input()).as("the input of item %d", e.getKey()).isEqualTo(e.getValue());
      int i = Integer.parseInt(e.getValue().substring(e.getValue().indexOf('-') + 1));
      assertThat(r.priority()).isEqualTo(i % 7);
    }
    assertThat(groups().sharedGroups()).as("groups of more than one item").isPositive();
    assertThat(groups().splitGroups()).isZero();
  }

  @Test
  void oneGroupMapsEveryIdToItsOwnItemWithItsOwnClockDelayAndReply() throws Exception {
    Clock fixed = Clock.fixed(Instant.parse("2030-01-02T03:04:05.678Z"), ZoneOffset.UTC);
    List<EnqueueGroups.Pending> members = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      NewWorkItem.Builder b = NewWorkItem.builder("q" + (i % 3)).input("item-" + i).priority(i);
      if (i % 5 == 0) {
        b.delay(Duration.ofHours(1));
      }
      if (i % 7 == 0) {
        b.replyOf(1000L + i);
      }
      members.add(new EnqueueGroups.Pending(store, b.build(), i % 2 == 0 ? fixed : null));
    }
    groups().submitAll(members);

    assertThat(groups().sharedGroups()).as("one statement for the group").isEqualTo(1);
    assertThat(groups().sharedItems()).isEqualTo(60);
    assertThat(count()).isEqualTo(60);
    Set<Long> ids = ConcurrentHashMap.newKeySet();
    for (int i = 0; i < members.size(); i++) {
      EnqueueGroups.Pending p = members.get(i);
      assertThat(p.isDone()).isTrue();
      assertThat(p.error).isNull();
      assertThat(ids.add(p.id)).isTrue();
      Row r = row(p.id);
      assertThat(r.input()).isEqualTo("item-" + i);
      assertThat(r.priority()).isEqualTo(i);
      assertThat(r.scheduled()).isEqualTo(i % 5 == 0);
      assertThat(r.replyOf()).isEqualTo(i % 7 == 0 ? Long.valueOf(1000L + i) : null);
      if (i % 2 == 0) {
        assertThat(r.createdAt()).isEqualTo(fixed.instant());
      } else {
        assertThat(r.createdAt()).isNotEqualTo(fixed.instant());
      }
    }
  }

  @Test
  void aLoneEnqueueIsWrittenAloneAndKeepsItsReply() throws Exception {
    LeaseManager producer = new LeaseManager(store, "producer");
    long id = producer.enqueue(NewWorkItem.builder("q").input("alone").replyOf(42L).build());
    Row r = row(id);
    assertThat(r.input()).isEqualTo("alone");
    assertThat(r.replyOf()).isEqualTo(42L);
    assertThat(groups().sharedGroups()).isZero();
  }

  @Test
  void aGroupWithAFailingItemFailsOnlyThatItemsCall() throws Exception {
    try (Connection c = store.dataSource().getConnection(); Statement st = c.createStatement()) {
      st.execute("CREATE FUNCTION refuse_bad() RETURNS trigger LANGUAGE plpgsql AS"
          + " $$ BEGIN RAISE EXCEPTION 'item refused by test trigger'; END $$");
      st.execute("CREATE TRIGGER refuse_bad BEFORE INSERT ON tether_work_items FOR EACH ROW"
          + " WHEN (NEW.task_id = 'bad') EXECUTE FUNCTION refuse_bad()");
    }
    List<EnqueueGroups.Pending> members = List.of(
        new EnqueueGroups.Pending(store, NewWorkItem.builder("q").input("good-1").build(), null),
        new EnqueueGroups.Pending(store, NewWorkItem.builder("q").input("bad").taskId("bad").build(), null),
        new EnqueueGroups.Pending(store, NewWorkItem.builder("q").input("good-2").build(), null));
    groups().submitAll(members);

    assertThat(groups().splitGroups()).as("the group failed and was split").isEqualTo(1);
    assertThat(members.get(1).error).isInstanceOf(TetherStoreException.class)
        .hasMessageContaining("item refused by test trigger");
    assertThat(members.get(0).error).isNull();
    assertThat(members.get(2).error).isNull();
    assertThat(row(members.get(0).id).input()).isEqualTo("good-1");
    assertThat(row(members.get(2).id).input()).isEqualTo("good-2");
    assertThat(count()).isEqualTo(2);
  }

  @Test
  void aGroupOnAClosedStoreFailsEveryCallWithoutRetrying() {
    List<EnqueueGroups.Pending> members = List.of(
        new EnqueueGroups.Pending(store, NewWorkItem.of("q", "a"), null),
        new EnqueueGroups.Pending(store, NewWorkItem.of("q", "b"), null));
    EnqueueGroups groups = groups();
    store.close();
    groups.submitAll(members);
    assertThat(members).allSatisfy(p -> assertThat(p.error).isInstanceOf(IllegalStateException.class));
    assertThat(groups.splitGroups()).isZero();
  }

  @Test
  void aGroupNotifiesAListenerOfItsQueueOnce() throws Exception {
    try (Connection listen = DriverManager.getConnection(schema.url()); Statement st = listen.createStatement()) {
      // a listening store of another process: a slot of queue q in the roster, and its channel
      WakeRoster listener = new WakeRoster(schema.name());
      int slot = listener.claim(listen, "q");
      String channel = listener.channel("q", slot);
      st.execute("LISTEN " + channel);
      List<EnqueueGroups.Pending> members = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        members.add(new EnqueueGroups.Pending(store, NewWorkItem.of("q", "n" + i), null));
      }
      groups().submitAll(members);
      assertThat(groups().sharedGroups()).isEqualTo(1);
      List<PGNotification> heard = new ArrayList<>();
      await().atMost(Duration.ofSeconds(30)).until(() -> {
        PGNotification[] got = listen.unwrap(PGConnection.class).getNotifications(100);
        if (got != null) {
          heard.addAll(List.of(got));
        }
        return !heard.isEmpty();
      });
      await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(5)).until(() -> {
        PGNotification[] got = listen.unwrap(PGConnection.class).getNotifications(50);
        if (got != null) {
          heard.addAll(List.of(got));
        }
        return true;
      });
      assertThat(heard).extracting(PGNotification::getName).containsExactly(channel);
      assertThat(heard).extracting(PGNotification::getParameter).containsExactly(WakeRoster.payload(0, "q"));
    }
  }

  @Test
  void groupedEnqueuesWakeAWaitingReceiverOfAnotherStore() throws Exception {
    int threads = 8;
    int each = 25;
    try (TetherStore other = TetherStore.open(schema.url())) {
      // Polls at the longest interval allowed; the notifications wake it (aGroupNotifiesListeners
      // shows that a group's statement notifies).
      JdbcMailbox<String, String> in = JdbcMailbox.builder(other, "wake", Codec.utf8(), Codec.utf8())
          .pollInterval(Duration.ofSeconds(5)).build();
      Set<String> got = ConcurrentHashMap.newKeySet();
      Thread receiver = new Thread(() -> {
        while (got.size() < threads * each) {
          for (Message<String, String> m : in.receive(10, Duration.ofMinutes(5), Duration.ofSeconds(20))) {
            got.add(m.body());
            m.acknowledge();
          }
        }
      }, "receiver");
      receiver.setDaemon(true);
      receiver.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> {
        assertThat(receiver.getState()).as("the receiver thread").isNotEqualTo(Thread.State.TERMINATED);
        return receiver.getState() == Thread.State.TIMED_WAITING;
      });

      LeaseManager producer = new LeaseManager(store, "producer");
      CyclicBarrier start = new CyclicBarrier(threads);
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      try {
        List<Future<?>> done = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          int thread = t;
          done.add(pool.submit(() -> {
            start.await();
            for (int i = 0; i < each; i++) {
              producer.enqueue(NewWorkItem.of("wake", "t" + thread + "-" + i));
            }
            return null;
          }));
        }
        for (Future<?> f : done) {
          f.get();
        }
      } finally {
        pool.shutdownNow();
      }
      await().atMost(Duration.ofMinutes(2)).until(() -> got.size() == threads * each);
      in.close();
      receiver.join();
    }
  }
}
