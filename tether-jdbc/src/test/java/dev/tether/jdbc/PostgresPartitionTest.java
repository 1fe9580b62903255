package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.tether.Codec;
import dev.tether.Heartbeat;
import dev.tether.LeaseExtender;
import dev.tether.LeaseExtenderConfig;
import dev.tether.Ticker;
import dev.tether.mailbox.Message;
import dev.tether.mailbox.ReceiptHandleExpiredException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A worker partitioned from a shared PostgreSQL (its connections go through a {@link TcpProxy}
 * that the test cuts) for longer than its lease: it finds its lease lost by its own monotonic
 * clock, counted from the last extension the store confirmed, before another worker can take the
 * item over; when the partition heals, its late checkpoint and acknowledgement are refused, and
 * the item keeps the new holder's outcome.
 */
@Timeout(120)
class PostgresPartitionTest {
  private final PostgresTestSchema db = new PostgresTestSchema("tether_t_");
  private final TcpProxy proxy = new TcpProxy(db.url());
  private TetherStore near;
  private TetherStore far;

  @AfterEach
  void close() {
    if (near != null) {
      near.close();
    }
    if (far != null) {
      far.close();
    }
    proxy.close();
    db.close();
  }

  private static TetherStore open(String url) {
    return TetherStore.open(url, TetherStoreConfig.builder().notifications(false)
        .connectionTimeout(Duration.ofSeconds(1)).build());
  }

  @Test
  void aPartitionedHolderKnowsItsLeaseIsLostBeforeATakeoverAndItsLateCheckpointAndAckAreRefused() {
    far = open(db.url());
    near = open(proxy.url(db.url()));
    JdbcMailbox<String, String> a =
        JdbcMailbox.builder(near, "q", Codec.utf8(), Codec.utf8()).holder("partitioned").build();
    JdbcMailbox<String, String> b =
        JdbcMailbox.builder(far, "q", Codec.utf8(), Codec.utf8()).holder("healthy").build();
    String id = b.send("job");
    Ticker ticker = Ticker.system();
    Heartbeat heartbeat = new Heartbeat(ticker);
    Duration visibility = Duration.ofSeconds(3);

    long receivedAt = ticker.read();
    List<Message<String, String>> got = a.receive(1, visibility, Duration.ZERO);
    assertThat(got).hasSize(1);
    Message<String, String> held = got.get(0);
    LeaseExtender extender =
        new LeaseExtender(LeaseExtenderConfig.of(Duration.ofMillis(300), Duration.ofSeconds(2)));
    long lostAt;
    try (LeaseExtender.Attachment attachment = extender.attach(held, heartbeat)) {
      attachment.leaseHeldUntil(receivedAt + visibility.toNanos());
      held.checkpoint("step-1".getBytes(StandardCharsets.UTF_8));
      // a healthy holder: its beats extend the lease past the first visibility timeout
      await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
          .until(() -> {
            heartbeat.beat();
            return attachment.extensions() >= 2;
          });

      proxy.cut(); // the partition: every call of this holder fails from now on

      await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
          .until(() -> {
            heartbeat.beat(); // the work goes on; its extensions fail
            return attachment.isLeaseLost();
          });
      lostAt = System.nanoTime();
      assertThat(attachment.isCancelled()).isFalse();
    }

    // another worker takes the item over as soon as the store's clock says the lease ran out
    List<Message<String, String>> taken = await().atMost(Duration.ofSeconds(20))
        .pollInterval(Duration.ofMillis(20))
        .until(() -> b.receive(1, Duration.ofMinutes(1), Duration.ZERO), l -> !l.isEmpty());
    long takenAt = System.nanoTime();
    Message<String, String> second = taken.get(0);
    assertThat(second.id()).isEqualTo(id);
    assertThat(second.deliveryCount()).isEqualTo(2);
    assertThat(lostAt).as("the partitioned holder knew before the takeover").isLessThan(takenAt);
    System.out.printf("partition: the cut-off holder presumed its lease lost %d ms before another"
        + " holder received the item%n", (takenAt - lostAt) / 1_000_000);
    assertThat(second.lastCheckpoint()).map(x -> new String(x, StandardCharsets.UTF_8))
        .as("the checkpoint taken before the partition is handed over").contains("step-1");

    proxy.restore(); // the partition heals: the old holder's late calls reach the store

    // (a call on a connection the cut broke fails as a connection error: retried)
    await().atMost(Duration.ofSeconds(20))
        .untilAsserted(() -> assertThatThrownBy(
                () -> held.checkpoint("late".getBytes(StandardCharsets.UTF_8)))
            .isInstanceOf(ReceiptHandleExpiredException.class));
    await().atMost(Duration.ofSeconds(20))
        .untilAsserted(() -> assertThatThrownBy(held::acknowledge)
            .isInstanceOf(ReceiptHandleExpiredException.class));
    assertThat(second.lastCheckpoint()).map(x -> new String(x, StandardCharsets.UTF_8)).contains("step-1");

    second.checkpoint("step-2".getBytes(StandardCharsets.UTF_8));
    second.acknowledge();
    LeaseManager lm = new LeaseManager(far, "inspector");
    WorkItem item = lm.find(Long.parseLong(id)).orElseThrow();
    assertThat(item.status().dbValue()).isEqualTo("completed");
    assertThat(item.deliveryCount()).isEqualTo(2);
  }
}
