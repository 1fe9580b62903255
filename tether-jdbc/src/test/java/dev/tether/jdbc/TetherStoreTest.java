package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.sqlite.SQLiteDataSource;

/** Opening stores: URLs, paths, caller data sources, unreachable databases. */
class TetherStoreTest {

  @Test
  void unsupportedUrlIsRejectedWithTheSupportedForms() {
    assertThatThrownBy(() -> TetherStore.open("jdbc:mysql://localhost/db"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("jdbc:mysql://localhost/db")
        .hasMessageContaining("jdbc:sqlite:");
  }

  @Test
  void sqliteUrlOpensInWalModeAndBarePathMeansTheSameFile() throws Exception {
    try (TestDatabase db = TestDatabase.sqlite()) {
      long id;
      try (TetherStore store = TetherStore.open("jdbc:sqlite:" + db.url())) {
        assertThat(store.engine()).isEqualTo(TetherStore.Engine.SQLITE);
        id = new LeaseManager(store, "w").enqueue(NewWorkItem.of("q", "x"));
        try (Connection c = store.dataSource().getConnection(); Statement st = c.createStatement();
            ResultSet rs = st.executeQuery("PRAGMA journal_mode")) {
          rs.next();
          assertThat(rs.getString(1)).isEqualToIgnoringCase("wal");
        }
      }
      try (TetherStore store = TetherStore.open(db.url())) {
        assertThat(new QueueMonitor(store).item(id)).isPresent();
      }
    }
  }

  @Test
  void aProbeOfAWorkingSqliteStoreWorksAndAClosedStoreRefusesIt() throws Exception {
    try (TestDatabase db = TestDatabase.sqlite()) {
      TetherStore store = TetherStore.open(db.url());
      assertThat(store.probe()).isTrue();
      assertThat(store.isAvailable()).isTrue();
      store.close();
      assertThatThrownBy(store::probe).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }
  }

  @Test
  void sqliteDurabilityAndBusyTimeoutFollowTheConfiguration() throws Exception {
    try (TestDatabase db = TestDatabase.sqlite()) {
      try (TetherStore normal = TetherStore.open(db.url())) {
        assertThat(pragma(normal, "synchronous")).isEqualTo("1"); // NORMAL
        assertThat(pragma(normal, "busy_timeout")).isEqualTo("30000");
      }
      try (TetherStore full = TetherStore.open(db.url(), TetherStoreConfig.builder()
          .sqliteSynchronous(TetherStoreConfig.SqliteSynchronous.FULL).busyTimeout(Duration.ofSeconds(5)).build())) {
        assertThat(pragma(full, "synchronous")).isEqualTo("2"); // FULL
        assertThat(pragma(full, "busy_timeout")).isEqualTo("5000");
      }
    }
  }

  private static String pragma(TetherStore store, String name) throws Exception {
    try (Connection c = store.dataSource().getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("PRAGMA " + name)) {
      rs.next();
      return rs.getString(1);
    }
  }

  @Test
  void callersDataSourceIsUsedAndNotClosed() throws Exception {
    try (TestDatabase db = TestDatabase.sqlite()) {
      SQLiteDataSource ds = new SQLiteDataSource();
      ds.setUrl("jdbc:sqlite:" + db.url());
      TetherStore store = TetherStore.open(ds);
      new LeaseManager(store, "w").enqueue(NewWorkItem.of("q", "x"));
      store.close();
      store.close();
      try (Connection c = ds.getConnection(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM tether_work_items")) {
        rs.next();
        assertThat(rs.getInt(1)).isEqualTo(1);
      }
      assertThatThrownBy(() -> new LeaseManager(store, "w").enqueue(NewWorkItem.of("q", "y")))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }
  }

  @Test
  void unreachablePostgresIsReportedAsStoreUnavailable() {
    assertThatThrownBy(() -> TetherStore.open("jdbc:postgresql://127.0.0.1:1/none?user=x&password=secret",
        TetherStoreConfig.builder().connectionTimeout(Duration.ofMillis(500)).build()))
        .isInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("127.0.0.1:1")
        .hasMessageNotContaining("secret");
  }

  @Test
  void configRejectsOutOfRangeValuesNamingThem() {
    assertThatThrownBy(() -> TetherStoreConfig.builder().maximumPoolSize(0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maximumPoolSize");
    assertThatThrownBy(() -> TetherStoreConfig.builder().busyTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("busyTimeout");
    assertThatThrownBy(() -> NewWorkItem.builder("q").maxAttempts(0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxAttempts");
    assertThatThrownBy(() -> new AcquireRequest("q", Duration.ofHours(13), 1, null, null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("leaseDuration");
  }

  @Test
  void aDataSourceThatCannotReachItsDatabaseFailsTheOpenSayingWhereToLook() {
    org.postgresql.ds.PGSimpleDataSource unreachable = new org.postgresql.ds.PGSimpleDataSource();
    unreachable.setServerNames(new String[] {"127.0.0.1"});
    unreachable.setPortNumbers(new int[] {1}); // nothing listens there
    unreachable.setDatabaseName("test");
    unreachable.setUser("postgres");
    assertThatThrownBy(() -> TetherStore.open(unreachable))
        .isInstanceOf(StoreUnavailableException.class)
        .hasMessageStartingWith("cannot open the Tether store on the caller's data source")
        .hasMessageContaining("check that the database is running")
        .hasMessageNotContaining("retry with backoff");
  }

  @Test
  void aUrlOfAnotherFormIsRefusedSayingWhatToGiveWithoutItsPassword() {
    // a DATABASE_URL as many platforms give it: it was taken for a SQLite file path
    assertThatThrownBy(() -> TetherStore.open("postgres://app:hunter2@db.example:5432/app"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not a JDBC URL")
        .hasMessageContaining("jdbc:postgresql://")
        .hasMessageNotContaining("hunter2");
  }
}
