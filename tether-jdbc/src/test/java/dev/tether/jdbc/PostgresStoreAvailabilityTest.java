package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.loop.WorkContext;
import dev.tether.mailbox.MailboxException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The store availability signal on a real PostgreSQL: the server ends this store's backends (as a
 * restart would, without restarting the shared server), the store reports itself unavailable, and
 * available again once a later call (or the listener's reconnect) works. Only this store's
 * connections are ended: they carry a unique {@code ApplicationName}.
 */
class PostgresStoreAvailabilityTest {
  private final PostgresTestSchema db = new PostgresTestSchema("tether_t_");
  private final String app = "tether-avail-" + UUID.randomUUID().toString().substring(0, 8);
  private final String baseUrl = db.baseUrl();
  private TetherStore store;

  @AfterEach
  void close() {
    if (store != null) {
      store.close();
    }
    db.close();
  }

  private TetherStore open(boolean notifications) {
    store = TetherStore.open(db.url() + "&ApplicationName=" + app,
        TetherStoreConfig.builder().notifications(notifications).build());
    return store;
  }

  /** Opens the store through {@code proxy} (1 s connection timeout, no listener); a probe works. */
  private void openThrough(TcpProxy proxy) {
    store = TetherStore.open(proxy.url(db.url()), TetherStoreConfig.builder().notifications(false)
        .connectionTimeout(Duration.ofSeconds(1)).build());
    assertThat(store.probe()).isTrue();
  }

  /** Backends of this store whose current or last query starts with {@code queryPrefix}. */
  private List<Integer> backends(String queryPrefix) throws SQLException {
    try (Connection c = DriverManager.getConnection(baseUrl);
        PreparedStatement ps = c.prepareStatement(
            "SELECT pid FROM pg_stat_activity WHERE application_name = ? AND pid <> pg_backend_pid()"
                + " AND query LIKE ?")) {
      ps.setString(1, app);
      ps.setString(2, queryPrefix + "%");
      List<Integer> pids = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          pids.add(rs.getInt(1));
        }
      }
      return pids;
    }
  }

  /** Ends this store's backends (all, or those whose query starts with the prefix); returns how many. */
  private int terminate(String queryPrefix) throws SQLException {
    try (Connection c = DriverManager.getConnection(baseUrl);
        PreparedStatement ps = c.prepareStatement(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
                + " WHERE application_name = ? AND pid <> pg_backend_pid() AND query LIKE ?")) {
      ps.setString(1, app);
      ps.setString(2, queryPrefix + "%");
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  @Test
  void endingTheStoresBackendsMidCallMakesItUnavailableAndTheLoopUnreadyUntilACallWorks()
      throws Exception {
    open(false);
    JdbcMailbox<String, String> jobs = JdbcMailbox.ofStrings(store, "jobs");
    jobs.send("one");
    MainLoop<String, String> loop = MainLoop.builder("w", jobs, (String b, WorkContext ctx) -> b)
        .config(MainLoopConfig.builder().waitTime(Duration.ZERO).build())
        .build();
    loop.run(1);
    assertThat(jobs.approximateCount()).isZero();
    assertThat(store.isAvailable()).isTrue();
    assertThat(loop.isReady()).isTrue();

    // a call in flight when the server ends the connections (as a restart does)
    CompletableFuture<Void> inFlight = CompletableFuture.runAsync(() -> store.read("sleeping", c -> {
      try (Statement st = c.createStatement()) {
        st.execute("SELECT pg_sleep(30)");
      }
      return null;
    }));
    await().atMost(Duration.ofSeconds(10)).until(() -> !backends("SELECT pg_sleep").isEmpty());
    assertThat(terminate("")).isGreaterThanOrEqualTo(1);

    assertThatThrownBy(() -> inFlight.get(20, TimeUnit.SECONDS))
        .isInstanceOf(ExecutionException.class)
        .cause().isInstanceOf(StoreUnavailableException.class).hasMessageContaining("57P01");
    assertThat(store.isAvailable()).as("after the failed call").isFalse();
    assertThat(jobs.isAvailable()).isFalse();
    assertThat(loop.isReady()).as("no receive failed, yet the loop is unready").isFalse();
    assertThat(store.availability().outages()).isEqualTo(1);

    // the next calls may meet other ended pooled connections; one that works ends the outage
    await().atMost(Duration.ofSeconds(15)).until(() -> {
      try {
        jobs.approximateCount();
      } catch (MailboxException e) {
        // another dead pooled connection; the pool replaces it
      }
      return store.isAvailable();
    });
    assertThat(loop.isReady()).isTrue();
    jobs.send("two");
    assertThat(jobs.approximateCount()).isEqualTo(1);
  }

  @Test
  void aProbeFindsAnOutageOfAnIdleStoreAndAnotherFindsTheDatabaseBack() throws Exception {
    try (TcpProxy proxy = new TcpProxy(db.url())) {
      openThrough(proxy);

      proxy.cut(); // the server is gone; no call has seen it yet
      assertThat(store.isAvailable()).isTrue();
      assertThat(store.probe()).isFalse();
      assertThat(store.isAvailable()).isFalse();
      assertThat(store.probe()).as("still gone").isFalse();

      proxy.restore();
      await().atMost(Duration.ofSeconds(15)).until(store::probe);
      assertThat(store.isAvailable()).isTrue();
      assertThat(store.availability().outages()).isEqualTo(1);
    }
    store.close();
    assertThatThrownBy(store::probe).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
  }

  @Test
  void aProbeOfADatabaseThatStoppedAnsweringGivesUpAfterTheConnectionTimeout() throws Exception {
    try (TcpProxy proxy = new TcpProxy(db.url())) {
      openThrough(proxy);

      proxy.freeze(); // connections stay open, nothing comes back: TCP alone would wait for minutes
      CompletableFuture<Boolean> probe = CompletableFuture.supplyAsync(store::probe);
      // the network timeout (1 s), or the pool's validation and connection timeouts, end it
      assertThat(probe.get(20, TimeUnit.SECONDS)).isFalse();
      assertThat(store.isAvailable()).isFalse();

      proxy.restore();
      await().atMost(Duration.ofSeconds(30)).until(store::probe);
      assertThat(store.isAvailable()).isTrue();
    }
  }

  @Test
  void openingThroughAServerThatNeverAnswersFailsAfterTheStoresOwnTimeoutNotTheJvmWideOne()
      throws Exception {
    int before = DriverManager.getLoginTimeout();
    try (TcpProxy proxy = new TcpProxy(db.url())) {
      proxy.freeze(); // accepts connections, never answers
      DriverManager.setLoginTimeout(60); // as another pool of the application would set it
      CompletableFuture<Throwable> opening = CompletableFuture.supplyAsync(() -> {
        try (TetherStore s = TetherStore.open(proxy.url(db.url()), TetherStoreConfig.builder()
            .notifications(false).connectionTimeout(Duration.ofSeconds(1)).build())) {
          return null;
        } catch (RuntimeException e) {
          return e;
        }
      });
      // the store's 1 s bounds the login; with the JVM-wide 60 s it would still be waiting
      assertThat(opening.get(30, TimeUnit.SECONDS)).as("the open failed").isNotNull();
    } finally {
      DriverManager.setLoginTimeout(before);
    }
  }

  @Test
  void losingTheNotificationListenerMakesTheStoreUnavailableUntilItReconnects() throws Exception {
    open(true);
    JdbcMailbox<String, String> jobs = JdbcMailbox.ofStrings(store, "jobs");
    assertThat(jobs.receive(1, Duration.ofSeconds(5), Duration.ofMillis(200))).isEmpty(); // starts the listener
    await().atMost(Duration.ofSeconds(10)).until(() -> backends("LISTEN").size() == 1);
    int before = backends("LISTEN").get(0);
    assertThat(store.isAvailable()).isTrue();

    assertThat(terminate("LISTEN")).isEqualTo(1); // only the listener's backend; no call fails

    await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(5))
        .until(() -> !store.isAvailable());
    await().atMost(Duration.ofSeconds(10)).until(store::isAvailable);
    await().atMost(Duration.ofSeconds(10)).until(
        () -> backends("LISTEN").size() == 1 && backends("LISTEN").get(0) != before);
    assertThat(store.availability().outages()).isEqualTo(1);
    jobs.send("after");
    assertThat(jobs.receive(1, Duration.ofSeconds(5), Duration.ZERO)).hasSize(1);
  }
}
