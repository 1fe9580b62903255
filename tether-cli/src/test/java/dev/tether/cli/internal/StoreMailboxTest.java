package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.TetherStore;
import dev.tether.mailbox.Message;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StoreMailboxTest {
  @TempDir Path dir;

  @Test
  void closeWakesAReceiveBlockedInItsLongPoll() throws Exception {
    try (TetherStore store = TetherStore.open(dir.resolve("t.db").toString())) {
      StoreMailbox mailbox = new StoreMailbox(store, new LeaseManager(store, "w"), "q");
      AtomicReference<List<Message<String, String>>> got = new AtomicReference<>();
      Thread receiver = new Thread(
          () -> got.set(mailbox.receive(1, Duration.ofMinutes(1), Duration.ofSeconds(20))));
      receiver.start();
      // blocked in the long poll's wait (not just starting up)
      await().atMost(Duration.ofSeconds(10))
          .until(() -> receiver.getState() == Thread.State.TIMED_WAITING);
      mailbox.close();
      // Well before the 20 s wait ends (Mailbox.close wakes blocked receivers).
      receiver.join(5_000);
      assertThat(receiver.isAlive()).as("receive still blocked 5 s after close").isFalse();
      assertThat(got.get()).isEmpty();
    }
  }

  @Test
  void aWaitingReceiveReturnsAnItemSentMeanwhile() throws Exception {
    try (TetherStore store = TetherStore.open(dir.resolve("t.db").toString())) {
      StoreMailbox mailbox = new StoreMailbox(store, new LeaseManager(store, "w"), "q");
      CompletableFuture<List<Message<String, String>>> got = CompletableFuture.supplyAsync(
          () -> mailbox.receive(1, Duration.ofMinutes(1), Duration.ofSeconds(20)));
      String id = mailbox.send("echo hi");
      await().atMost(Duration.ofSeconds(15)).until(got::isDone);
      assertThat(got.get()).extracting(Message::id).containsExactly(id);
      mailbox.close();
    }
  }

  @Test
  void aNegativeWaitTimeLooksOnceAndReturns() {
    try (TetherStore store = TetherStore.open(dir.resolve("t.db").toString())) {
      StoreMailbox mailbox = new StoreMailbox(store, new LeaseManager(store, "w"), "q");
      assertThat(mailbox.receive(1, Duration.ofMinutes(1), Duration.ofSeconds(-1))).isEmpty();
      String id = mailbox.send("true");
      assertThat(mailbox.receive(1, Duration.ofMinutes(1), Duration.ZERO))
          .extracting(Message::id).containsExactly(id);
    }
  }
}
