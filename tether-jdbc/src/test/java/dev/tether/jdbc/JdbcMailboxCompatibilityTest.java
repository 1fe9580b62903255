package dev.tether.jdbc;

import dev.tether.Codec;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tether.mailbox.InMemoryMailbox;
import dev.tether.mailbox.InvalidParameterException;
import dev.tether.mailbox.MailboxConnectionException;
import dev.tether.mailbox.Message;
import dev.tether.mailbox.SerializationException;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/** JdbcMailbox behaviour beyond the shared contract, on every engine (subclass per engine). */
abstract class JdbcMailboxCompatibilityTest extends StoreTestBase {
  static final Duration MINUTE = Duration.ofMinutes(1);

  @Test
  void headersAreStoredWithTheItemAndDeliveredOnEveryDelivery() {
    JdbcMailbox<String, String> m = JdbcMailbox.ofStrings(store, "q");
    Map<String, String> headers = new java.util.LinkedHashMap<>();
    headers.put("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    headers.put("odd key=&%", "välue & more=1");
    m.send("a", headers);
    m.send("b");
    Message<String, String> first = m.receive(1, MINUTE, Duration.ZERO).get(0);
    assertThat(first.headers()).containsExactlyEntriesOf(headers);
    first.handBack();
    Message<String, String> again = m.receive(1, MINUTE, Duration.ZERO).get(0);
    assertThat(again.deliveryCount()).isEqualTo(2);
    assertThat(again.headers()).containsExactlyEntriesOf(headers);
    assertThat(m.receive(1, MINUTE, Duration.ZERO).get(0).headers()).isEmpty();
  }

  @Test
  void headersOfABatchEnqueueAreKeptPerItem() {
    LeaseManager leases = new LeaseManager(store, "producer");
    List<NewWorkItem> items = new java.util.ArrayList<>();
    for (int i = 0; i < 5; i++) {
      NewWorkItem.Builder b = NewWorkItem.builder("batch").input("i" + i);
      if (i % 2 == 0) {
        b.headers(Map.of("n", Integer.toString(i)));
      }
      items.add(b.build());
    }
    leases.enqueueAll(items);
    JdbcMailbox<String, String> m = JdbcMailbox.ofStrings(store, "batch");
    for (Message<String, String> msg : m.receive(10, MINUTE, Duration.ZERO)) {
      int i = Integer.parseInt(msg.body().substring(1));
      assertThat(msg.headers()).isEqualTo(i % 2 == 0 ? Map.of("n", Integer.toString(i)) : Map.of());
    }
  }

  @Test
  void headersOverTheLimitAreRefusedAndNothingIsSent() {
    JdbcMailbox<String, String> m = JdbcMailbox.ofStrings(store, "q");
    assertThatThrownBy(() -> m.send("x", Map.of("k", "v".repeat(9000))))
        .isInstanceOf(dev.tether.mailbox.InvalidParameterException.class)
        .hasMessageContaining("over the limit").hasMessageContaining("nothing was sent");
    assertThatThrownBy(() -> m.send("x", Map.of(" ", "v")))
        .isInstanceOf(dev.tether.mailbox.InvalidParameterException.class);
    assertThat(m.approximateCount()).isZero();
  }

  @Test
  void bodyThatCannotBeEncodedThrowsSerializationAndWritesNothing() {
    Codec<String> failing = new Codec<>() {
      @Override
      public byte[] encode(String body) {
        throw new IllegalArgumentException("cannot encode " + body);
      }

      @Override
      public String decode(byte[] bytes) {
        return "";
      }
    };
    JdbcMailbox<String, String> m = JdbcMailbox.builder(store, "q", failing, Codec.utf8()).build();
    assertThatThrownBy(() -> m.send("x")).isInstanceOf(SerializationException.class)
        .hasMessageContaining("cannot encode x").hasMessageContaining("nothing was written");
    assertThat(m.approximateCount()).isZero();
  }

  @Test
  void waitingReceiversPollEveryThreeSecondsOnlyWhereOtherProcessesSendsWakeThem() {
    JdbcMailbox<String, String> m = JdbcMailbox.ofStrings(store, "q");
    boolean postgres = store.engine() == TetherStore.Engine.POSTGRESQL;
    assertThat(store.usesNotifications()).isEqualTo(postgres);
    assertThat(m.pollInterval())
        .isEqualTo(store.defaultPollInterval())
        .isEqualTo(postgres ? Duration.ofSeconds(3) : Duration.ofMillis(100));
    assertThat(JdbcMailbox.builder(store, "q", Codec.utf8(), Codec.utf8())
            .pollInterval(Duration.ofMillis(7)).build().pollInterval())
        .isEqualTo(Duration.ofMillis(7));
  }

  @Test
  void oversizedBodyThrowsSerializationAndWritesNothing() {
    JdbcMailbox<byte[], String> m = JdbcMailbox.builder(store, "q", Codec.bytes(), Codec.utf8())
        .maxBodyBytes(100).build();
    assertThatThrownBy(() -> m.send(new byte[101])).isInstanceOf(SerializationException.class)
        .hasMessageContaining("101 bytes").hasMessageContaining("100");
    assertThat(m.approximateCount()).isZero();
    m.send(new byte[100]);
    assertThat(m.receive(1, MINUTE, Duration.ZERO)).singleElement()
        .satisfies(msg -> assertThat(msg.body()).hasSize(100));
  }

  @Test
  void bytesRoundTripAndReplyGoesToTheReplyQueueAtomically() {
    JdbcMailbox<byte[], byte[]> requests = JdbcMailbox.builder(store, "req", Codec.bytes(), Codec.bytes())
        .clock(clock).build();
    JdbcMailbox<byte[], byte[]> replies = JdbcMailbox.builder(store, "rep", Codec.bytes(), Codec.bytes())
        .clock(clock).build();
    requests.send(new byte[] {1, 2, 3}, replies);
    Message<byte[], byte[]> m = requests.receive(1, MINUTE, Duration.ZERO).get(0);
    assertThat(m.body()).containsExactly(1, 2, 3);
    m.replyAndAcknowledge(new byte[] {9});
    assertThat(replies.receive(1, MINUTE, Duration.ZERO).get(0).body()).containsExactly(9);
    assertThat(new QueueMonitor(store).countsByStatus())
        .contains(new QueueCount("req", WorkStatus.COMPLETED, 1), new QueueCount("rep", WorkStatus.IN_PROGRESS, 1));
  }

  @Test
  void replyToAMailboxOfAnotherKindIsRejected() {
    JdbcMailbox<String, String> m = JdbcMailbox.ofStrings(store, "q");
    try (InMemoryMailbox<String, String> other = InMemoryMailbox.<String, String>builder("mem").build()) {
      assertThatThrownBy(() -> m.send("x", other)).isInstanceOf(InvalidParameterException.class)
          .hasMessageContaining("JdbcMailbox");
    }
  }

  @Test
  void aMailboxOnAnotherStoreOfTheSameDatabaseSeesMessagesByPolling() {
    try (TetherStore second = db.open(TetherStoreConfig.builder().clock(clock).build())) {
      JdbcMailbox<String, String> sender = JdbcMailbox.ofStrings(second, "shared");
      JdbcMailbox<String, String> receiver = JdbcMailbox.builder(store, "shared", Codec.utf8(), Codec.utf8())
          .pollInterval(Duration.ofMillis(20)).build();
      Thread t = new Thread(() -> {
        try {
          Thread.sleep(200);
        } catch (InterruptedException e) {
          return;
        }
        sender.send("from another pool");
      }, "tether-test-sender");
      t.start();
      List<Message<String, String>> got = receiver.receive(1, MINUTE, Duration.ofSeconds(5));
      assertThat(got).extracting(Message::body).containsExactly("from another pool");
    }
  }

  @Test
  void lostDatabaseConnectivityThrowsMailboxConnectionException() {
    AtomicBoolean down = new AtomicBoolean();
    DataSource flaky = new SwitchableDataSource(store.dataSource(), down);
    try (TetherStore viaFlaky = TetherStore.open(flaky, TetherStoreConfig.builder().clock(clock).build())) {
      JdbcMailbox<String, String> m = JdbcMailbox.ofStrings(viaFlaky, "q");
      m.send("before");
      down.set(true);
      assertThatThrownBy(() -> m.send("during")).isInstanceOf(MailboxConnectionException.class)
          .hasMessageContaining("retry");
      assertThatThrownBy(() -> m.receive(1, MINUTE, Duration.ZERO)).isInstanceOf(MailboxConnectionException.class);
      down.set(false);
      assertThat(m.receive(10, MINUTE, Duration.ZERO)).extracting(Message::body).containsExactly("before");
    }
  }

  /** Delegates to a real data source, refusing connections while {@code down} is set. */
  static final class SwitchableDataSource implements DataSource {
    private final DataSource real;
    private final AtomicBoolean down;

    SwitchableDataSource(DataSource real, AtomicBoolean down) {
      this.real = real;
      this.down = down;
    }

    @Override
    public Connection getConnection() throws SQLException {
      if (down.get()) {
        throw new SQLTransientConnectionException("connection refused (simulated network partition)", "08001");
      }
      return real.getConnection();
    }

    @Override
    public Connection getConnection(String user, String password) throws SQLException {
      return getConnection();
    }

    @Override
    public PrintWriter getLogWriter() throws SQLException {
      return real.getLogWriter();
    }

    @Override
    public void setLogWriter(PrintWriter out) throws SQLException {
      real.setLogWriter(out);
    }

    @Override
    public void setLoginTimeout(int seconds) throws SQLException {
      real.setLoginTimeout(seconds);
    }

    @Override
    public int getLoginTimeout() throws SQLException {
      return real.getLoginTimeout();
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
      return real.getParentLogger();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      return real.unwrap(iface);
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) throws SQLException {
      return real.isWrapperFor(iface);
    }
  }
}
