package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.mailbox.Message;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Wake-ups across processes on PostgreSQL (each store stands for a process: its own pool and
 * listener): one enqueue wakes a few listeners, not every one; a wake-up that reaches a process
 * without a waiting receiver is passed on; a lost one is found by the listeners' poll; waiting
 * receivers do not look at the database while the listener polls for them; cancellations still
 * arrive as notifications.
 */
class PostgresWakeupTest {
  private static final Duration LEASE = Duration.ofMinutes(5);
  private static final Duration LONG_WAIT = Duration.ofSeconds(30);

  private PostgresTestSchema schema;
  private final List<TetherStore> stores = new ArrayList<>();
  private final List<Thread> receivers = new ArrayList<>();
  private final AtomicBoolean stopping = new AtomicBoolean();
  /** Which store took each lease: "index:item id". */
  private final List<String> taken = new CopyOnWriteArrayList<>();

  @BeforeEach
  void createSchema() {
    schema = new PostgresTestSchema("tether_wake_");
  }

  @AfterEach
  void closeAll() throws InterruptedException {
    stopping.set(true);
    for (TetherStore s : stores) {
      s.close(); // wakes its waiting receivers
    }
    for (Thread t : receivers) {
      t.join(10_000);
    }
    schema.close();
  }

  private TetherStore open() {
    TetherStore s = TetherStore.open(schema.url(), TetherStoreConfig.builder().maximumPoolSize(1).wakeRoster(true).build());
    stores.add(s);
    return s;
  }

  /** A store with the default configuration: notifications without the wake-up roster. */
  private TetherStore openDefault() {
    TetherStore s = TetherStore.open(schema.url(), TetherStoreConfig.builder().maximumPoolSize(1).build());
    stores.add(s);
    return s;
  }

  @Test
  void byDefaultThereIsNoRosterAndOneEnqueueWakesEveryListeningProcess() {
    assertThat(TetherStoreConfig.builder().build().wakeRoster()).isFalse();
    List<TetherStore> fleet = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      TetherStore s = openDefault();
      fleet.add(s);
      receiver(s, i);
    }
    // the listener signals once it listens; a receiver of "q" waits
    for (TetherStore s : fleet) {
      await().atMost(Duration.ofSeconds(20)).until(() -> s.wakeups().generation() > 0 && s.wakeups().hasWaiter("q"));
      assertThat(s.notifier()).as("no notifier without the roster").isNull();
    }
    long[] before = fleet.stream().mapToLong(s -> s.wakeups().generation()).toArray();
    TetherStore producer = openDefault();

    long id = new LeaseManager(producer, "producer").enqueue(NewWorkItem.of("q", "one item"));

    await().atMost(Duration.ofSeconds(20)).until(() -> taken.stream().anyMatch(t -> t.endsWith(":" + id)));
    for (int i = 0; i < fleet.size(); i++) {
      int k = i;
      await().atMost(Duration.ofSeconds(20)).until(() -> fleet.get(k).wakeups().generation() > before[k]);
    }
    assertThat(taken).hasSize(1);
  }

  /** A receiver looping on long polls of queue "q" on {@code store}, recording what it takes. */
  private void receiver(TetherStore store, int index) {
    LeaseManager leases = new LeaseManager(store, "receiver-" + index);
    Thread t = new Thread(() -> {
      while (!stopping.get()) {
        try {
          Optional<Lease> got = leases.acquire(AcquireRequest.one("q", LEASE), LONG_WAIT)
              .stream().findFirst();
          got.ifPresent(l -> taken.add(index + ":" + l.itemId()));
        } catch (RuntimeException e) {
          if (!stopping.get()) {
            throw e;
          }
        }
      }
    }, "tether-test-receiver-" + index);
    receivers.add(t);
    t.start();
  }

  /** Waits until the store listens with a roster slot and a receiver of "q" waits. */
  private static void awaitListening(TetherStore store) {
    await().atMost(Duration.ofSeconds(20)).until(() -> store.notifier().ownSlot() >= 0
        && store.wakeups().hasWaiter("q"));
  }

  private static long pollHits(List<TetherStore> stores) {
    return stores.stream().mapToLong(s -> s.wakeups().sharedPollHits()).sum();
  }

  private static long looks(List<TetherStore> stores) {
    return stores.stream().mapToLong(s -> s.wakeups().looks()).sum();
  }

  @Test
  void oneEnqueueWakesAFewListeningProcessesNotEveryOne() {
    List<TetherStore> fleet = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      TetherStore s = open();
      fleet.add(s);
      receiver(s, i);
    }
    fleet.forEach(PostgresWakeupTest::awaitListening);
    TetherStore producer = open();
    // every receiver has looked and waits; the listeners poll for them from here on
    await().atMost(Duration.ofSeconds(20)).until(() -> fleet.stream().allMatch(s -> s.wakeups().sharedPolls() > 0));
    long before = looks(fleet);
    long hitsBefore = pollHits(fleet);

    long id = new LeaseManager(producer, "producer").enqueue(NewWorkItem.of("q", "one item"));

    await().atMost(Duration.ofSeconds(20)).until(() -> taken.stream().anyMatch(t -> t.endsWith(":" + id)));
    // two targets; a listener's poll that finds the item before it is taken (more of them the
    // slower the take, as on a loaded machine) wakes its own receiver: one look each, counted
    // apart. Late wake-ups would show within the next poll interval.
    await().during(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(5))
        .until(() -> looks(fleet) - before <= WakeNotifier.FANOUT + 1 + pollHits(fleet) - hitsBefore);
    assertThat(looks(fleet) - before).as("acquisition attempts across 8 listening processes for one enqueue")
        .isBetween(1L, WakeNotifier.FANOUT + 1 + pollHits(fleet) - hitsBefore);
    assertThat(producer.notifier().notificationsSent()).as("wake-ups the enqueue sent").isEqualTo(WakeNotifier.FANOUT);
    assertThat(taken).hasSize(1);
  }

  @Test
  void aWakeUpThatReachesAProcessWithNoWaitingReceiverIsPassedOn() {
    TetherStore busy = open(); // listens (slot 0) but its receivers are all busy: none waits
    busy.wakeups(); // starts its listener
    await().atMost(Duration.ofSeconds(20)).until(() -> busy.notifier().ownSlot() == 0);
    TetherStore idle = open();
    receiver(idle, 1);
    awaitListening(idle);
    TetherStore producer = open();
    producer.notifier().fanout(1); // the first wake-up goes to the lowest slot: the busy process

    long id = new LeaseManager(producer, "producer").enqueue(NewWorkItem.of("q", "passed on"));

    await().atMost(Duration.ofSeconds(20)).until(() -> taken.contains("1:" + id));
    assertThat(busy.notifier().notificationsSent()).as("the busy process passed the wake-up on").isEqualTo(1);
  }

  @Test
  void aWakeUpLostWithTheProcessItWentToIsMadeGoodByTheNextPoll() throws Exception {
    // a process that holds a roster slot but died before hearing anything: its connection holds
    // slot 0 and listens to nothing
    try (Connection dead = DriverManager.getConnection(schema.url())) {
      int tag = WakeNotifier.tag(schema.name());
      try (PreparedStatement ps = dead.prepareStatement("SELECT pg_try_advisory_lock(?, 0)")) {
        ps.setInt(1, tag);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          assertThat(rs.getBoolean(1)).isTrue();
        }
      }
      TetherStore idle = open();
      receiver(idle, 1);
      awaitListening(idle);
      assertThat(idle.notifier().ownSlot()).isEqualTo(1);
      TetherStore producer = open();
      producer.notifier().fanout(1);

      long id = new LeaseManager(producer, "producer").enqueue(NewWorkItem.of("q", "lost wake-up"));

      // the receiver waits 30 s: taking it well before says the listener's poll (every second)
      // found it
      await().atMost(Duration.ofSeconds(10)).until(() -> taken.contains("1:" + id));
      assertThat(producer.notifier().notificationsSent()).as("the wake-up went to the dead slot").isEqualTo(1);
    }
  }

  @Test
  void waitingReceiversDoNotLookAtTheDatabaseWhileTheListenerPollsForThem() {
    TetherStore store = TetherStore.open(schema.url(), TetherStoreConfig.builder().maximumPoolSize(4).wakeRoster(true).build());
    stores.add(store);
    JdbcMailbox<String, String> box = JdbcMailbox.ofStrings(store, "q");
    for (int i = 0; i < 8; i++) {
      int index = i;
      Thread t = new Thread(() -> {
        while (!stopping.get()) {
          // a receive of 2 s (twice the poll interval) returns empty and starts again at once,
          // as an idle MainLoop does every wait time
          List<Message<String, String>> got = box.receive(1, Duration.ofMinutes(1), Duration.ofSeconds(2));
          got.forEach(m -> taken.add(index + ":" + m.id()));
        }
      }, "tether-test-idle-" + i);
      receivers.add(t);
      t.start();
    }
    await().atMost(Duration.ofSeconds(20)).until(() -> store.wakeups().sharedPolls() >= 2);
    long looks = store.wakeups().looks();
    long polls = store.wakeups().sharedPolls();

    await().atMost(Duration.ofSeconds(30)).until(() -> store.wakeups().sharedPolls() >= polls + 5);

    // 8 receives restarted about twice each in this time (some 20 looks without the rule); they
    // wait on the poll's look. On a loaded machine a poll may come late, past the window in which
    // a restart trusts it, and a restart then looks: fewer than one per receiver all the same.
    assertThat(store.wakeups().looks() - looks).as("looks by idle receivers over 5 polls").isLessThan(8);
    assertThat(taken).isEmpty();
    // and an item is still taken at once by a receiver, woken by its enqueue
    String id = box.send("work");
    await().atMost(Duration.ofSeconds(10)).until(() -> taken.stream().anyMatch(t -> t.endsWith(":" + id)));
  }

  @Test
  void aCancellationStillReachesTheHolderAsANotificationAmongManyListeners() {
    TetherStore holder = open();
    List<TetherStore> others = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      TetherStore s = open();
      others.add(s);
      receiver(s, i);
    }
    others.forEach(PostgresWakeupTest::awaitListening);
    JdbcMailbox<String, String> jobs = JdbcMailbox.ofStrings(holder, "jobs");
    String id = jobs.send("long job");
    Message<String, String> m = jobs.receive(1, LEASE, Duration.ofSeconds(10)).get(0);
    AtomicBoolean told = new AtomicBoolean();
    try (Message.Subscription watch = m.watchCancellation(() -> told.set(true))) {
      TetherStore operator = open();
      assertThat(new QueueAdmin(operator).cancel(Long.parseLong(id), "not needed")).isTrue();

      await().atMost(Duration.ofSeconds(20)).untilTrue(told);
      assertThat(holder.cancelWatch().notificationsHeard()).as("told by the notification").isGreaterThanOrEqualTo(1);
    }
  }
}
