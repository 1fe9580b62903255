package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.mailbox.Message;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

class PostgresThroughputTest extends ThroughputCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }

  @Override
  void failCompletionOf(Connection c, long id) throws Exception {
    execute(c, "CREATE FUNCTION fail_completion() RETURNS trigger LANGUAGE plpgsql AS"
        + " $$ BEGIN RAISE EXCEPTION 'completion refused by test trigger'; END $$");
    execute(c, "CREATE TRIGGER fail_completion BEFORE UPDATE ON work_items FOR EACH ROW"
        + " WHEN (NEW.id = " + id + " AND NEW.status = 'completed') EXECUTE FUNCTION fail_completion()");
  }

  @Test
  void enqueueInAnotherStoreWakesAWaitingReceiverBeforeItsNextPoll() throws Exception {
    // The receiver polls only every 5 s; the item must start long before that: woken by NOTIFY.
    JdbcMailbox<String, String> in = JdbcMailbox.builder(store, "wake", BodyCodec.utf8(), BodyCodec.utf8())
        .pollInterval(Duration.ofSeconds(5)).build();
    in.receive(1, LEASE, Duration.ofMillis(50)); // starts the listener
    try (TetherStore other = db.open(TetherStoreConfig.builder().clock(clock).build())) {
      CompletableFuture<List<Message<String, String>>> got =
          CompletableFuture.supplyAsync(() -> in.receive(1, LEASE, Duration.ofSeconds(20)));
      Thread.sleep(300); // let the receiver block in its wait (not a timing assertion)
      new LeaseManager(other, "producer").enqueue(NewWorkItem.of("wake", "hello"));
      Awaitility.await().atMost(Duration.ofSeconds(4)).until(got::isDone);
      assertThat(got.get()).extracting(Message::body).containsExactly("hello");
    }
  }

  @Test
  void withNotificationsOffAWaitingReceiverStillFindsTheItemByPolling() throws Exception {
    TestDatabase shared = db;
    try (TetherStore quiet = shared.open(TetherStoreConfig.builder().notifications(false).build());
        TetherStore other = shared.open(TetherStoreConfig.builder().notifications(false).build())) {
      JdbcMailbox<String, String> in = JdbcMailbox.builder(quiet, "poll", BodyCodec.utf8(), BodyCodec.utf8())
          .pollInterval(Duration.ofMillis(50)).build();
      CompletableFuture<List<Message<String, String>>> got =
          CompletableFuture.supplyAsync(() -> in.receive(1, LEASE, Duration.ofSeconds(20)));
      new LeaseManager(other, "producer").enqueue(NewWorkItem.of("poll", "hello"));
      assertThat(got.get()).extracting(Message::body).containsExactly("hello");
    }
  }
}
