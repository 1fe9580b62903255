package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The store's tables live in the schema it is given, and never touch an application's own. */
class PostgresSchemaOptionTest {
  private final PostgresTestSchema app = new PostgresTestSchema("tether_app_");
  private final String tetherSchema = app.name() + "_q";

  @AfterEach
  void drop() throws Exception {
    try (Connection c = DriverManager.getConnection(app.baseUrl()); Statement st = c.createStatement()) {
      st.execute("DROP SCHEMA IF EXISTS " + tetherSchema + " CASCADE");
    }
    app.close();
  }

  private List<String> tablesIn(String schema) throws Exception {
    List<String> out = new ArrayList<>();
    try (Connection c = DriverManager.getConnection(app.baseUrl());
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT table_name FROM information_schema.tables WHERE table_schema = '"
            + schema + "' ORDER BY table_name")) {
      while (rs.next()) {
        out.add(rs.getString(1));
      }
    }
    return out;
  }

  @Test
  void aGivenSchemaIsCreatedAndHoldsTheTablesOfAStoreOnItsOwnPool() throws Exception {
    assertThatThrownBy(() -> TetherStore.open(app.url(), TetherStoreConfig.builder().schema(tetherSchema).build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("currentSchema").hasMessageContaining(tetherSchema);
    try (TetherStore store = TetherStore.open(app.baseUrl(), TetherStoreConfig.builder().schema(tetherSchema).build())) {
      LeaseManager leases = new LeaseManager(store, "w");
      long id = leases.enqueue(NewWorkItem.of("q", "in its schema"));
      assertThat(leases.acquire("q", Duration.ofMinutes(1))).get().extracting(Lease::itemId).isEqualTo(id);
    }
    assertThat(tablesIn(tetherSchema)).contains("tether_work_items", "tether_schema_version");
    assertThat(tablesIn(app.name())).isEmpty();
  }

  @Test
  void aCallersPoolThatDoesNotAutoCommitKeepsItsSchemaForTheStoresTables() throws Exception {
    // HikariCP applies a pool's schema with a SET on each new connection; without auto-commit
    // that SET sits in an open transaction, and the first rollback on the connection undoes it
    // the connections' schema without the pool's setting: a fresh one (not the shared public)
    HikariConfig hc = poolWithoutAutoCommit(tetherSchema, app.name(), 2);
    createSchema(tetherSchema);
    TetherStoreConfig config = TetherStoreConfig.builder().groupCommit(false).notifications(false).build();
    try (HikariDataSource ds = new HikariDataSource(hc); TetherStore store = TetherStore.open(ds, config)) {
      // the pool's schema is the store's, every other setting as given
      assertThat(store.config().schema()).contains(app.name());
      assertThat(store.config().groupCommit()).isFalse();
      assertThat(store.config().notifications()).isFalse();
      LeaseManager leases = new LeaseManager(store, "w");
      long id = leases.enqueue(NewWorkItem.of("q", "in the pool's schema"));
      assertThat(leases.acquire("q", Duration.ofMinutes(1))).get().extracting(Lease::itemId).isEqualTo(id);
      try (Connection c = ds.getConnection(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT count(*) FROM " + app.name() + ".tether_work_items")) {
        rs.next();
        assertThat(rs.getLong(1)).isEqualTo(1);
        c.rollback();
      }
    }
    assertThat(tablesIn(app.name())).contains("tether_work_items", "tether_schema_version");
    assertThat(tablesIn(tetherSchema)).isEmpty();
  }

  @Test
  void aPoolSchemaWithCapitalsIsNotAdoptedAsTetherNamesSchemasUnquoted() throws Exception {
    // PostgreSQL would keep the capital; Tether would fold it
    HikariConfig hc = poolWithoutAutoCommit(tetherSchema, "App_" + app.name(), 1);
    createSchema(tetherSchema);
    try (HikariDataSource ds = new HikariDataSource(hc); Connection c = ds.getConnection()) {
      TetherStoreConfig config = TetherStoreConfig.defaults();
      assertThat(TetherStore.adoptPoolSchema(ds, c, config)).isSameAs(config);
      c.rollback();
    }
  }

  @Test
  void aRefusedSendInsideACallersTransactionGivesTheConnectionItsSearchPathBack() throws Exception {
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(app.url());
    hc.setMaximumPoolSize(2);
    try (HikariDataSource ds = new HikariDataSource(hc);
        TetherStore store = TetherStore.open(ds, TetherStoreConfig.builder().schema(tetherSchema).build())) {
      JdbcMailbox<String, String> full = JdbcMailbox.builder(store, "full", dev.tether.Codec.utf8(),
          dev.tether.Codec.utf8()).capacity(1).build();
      full.send("the one it holds");
      try (Connection c = ds.getConnection()) {
        String before = searchPath(c);
        c.setAutoCommit(false);
        assertThatThrownBy(() -> full.send(c, "one too many"))
            .isInstanceOf(dev.tether.mailbox.MailboxFullException.class);
        assertThat(searchPath(c)).as("the caller's transaction goes on in its own schema").isEqualTo(before);
        c.rollback();
        c.setAutoCommit(true);
      }
      full.close();
    }
  }

  private static String searchPath(Connection c) throws Exception {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SHOW search_path")) {
      rs.next();
      return rs.getString(1);
    }
  }

  /**
   * A HikariCP pool that does not auto-commit and sets {@code schema} on each new connection,
   * whose connections' schema without that setting is {@code searchPath}.
   */
  private HikariConfig poolWithoutAutoCommit(String searchPath, String schema, int size) {
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(app.baseUrl() + (app.baseUrl().contains("?") ? "&" : "?") + "options=-c%20search_path%3D"
        + searchPath);
    hc.setSchema(schema);
    hc.setAutoCommit(false);
    hc.setMaximumPoolSize(size);
    return hc;
  }

  private void createSchema(String schema) throws Exception {
    try (Connection c = DriverManager.getConnection(app.baseUrl()); Statement st = c.createStatement()) {
      st.execute("CREATE SCHEMA IF NOT EXISTS " + schema);
    }
  }

  @Test
  void aStoreThatRanBeforeOnSuchAPoolKeepsTheTablesItHasRatherThanStrandingItsItems() throws Exception {
    long id;
    try (TetherStore earlier = TetherStore.open(app.url())) { // the tables where an earlier store put them
      id = new LeaseManager(earlier, "w").enqueue(NewWorkItem.of("q", "from before"));
    }
    // the connection's own schema, without the pool's setting, is the application's
    HikariConfig hc = poolWithoutAutoCommit(app.name(), tetherSchema, 2);
    createSchema(tetherSchema);
    try (HikariDataSource ds = new HikariDataSource(hc); TetherStore store = TetherStore.open(ds)) {
      assertThat(store.config().schema()).contains(app.name());
      assertThat(new LeaseManager(store, "w").acquire("q", Duration.ofMinutes(1))).get()
          .extracting(Lease::itemId).isEqualTo(id);
    }
    assertThat(tablesIn(tetherSchema)).isEmpty();
  }

  @Test
  void theUrlsCurrentSchemaIsCreatedWhenMissing() throws Exception {
    String url = app.baseUrl() + (app.baseUrl().contains("?") ? "&" : "?") + "currentSchema=" + tetherSchema;
    try (TetherStore store = TetherStore.open(url)) {
      new LeaseManager(store, "w").enqueue(NewWorkItem.of("q", "x"));
    }
    assertThat(tablesIn(tetherSchema)).contains("tether_work_items");
  }

  @Test
  void onACallersDataSourceTheSchemaIsUsedAndEveryConnectionIsGivenBackAsItWas() throws Exception {
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(app.url()); // the application's own schema
    hc.setMaximumPoolSize(2);
    try (HikariDataSource ds = new HikariDataSource(hc)) {
      String before;
      try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
        st.execute("CREATE TABLE tether_work_items (id INT)"); // the application's own, same name
        try (ResultSet rs = st.executeQuery("SHOW search_path")) {
          rs.next();
          before = rs.getString(1);
        }
      }
      try (TetherStore store = TetherStore.open(ds, TetherStoreConfig.builder().schema(tetherSchema).build())) {
        LeaseManager leases = new LeaseManager(store, "w");
        leases.enqueue(NewWorkItem.of("q", "own"));
        long committed;
        try (Connection c = ds.getConnection()) {
          c.setAutoCommit(false);
          committed = leases.enqueue(c, NewWorkItem.of("q", "committed"));
          c.commit();
          leases.enqueue(c, NewWorkItem.of("q", "rolled back"));
          c.rollback();
          c.setAutoCommit(true);
          try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SHOW search_path")) {
            rs.next();
            assertThat(rs.getString(1)).isEqualTo(before);
          }
        }
        List<String> got = new ArrayList<>();
        for (Lease l : leases.acquire(AcquireRequest.batch("q", Duration.ofMinutes(1), 10))) {
          got.add(new String(l.input(), java.nio.charset.StandardCharsets.UTF_8));
        }
        assertThat(got).containsExactlyInAnyOrder("own", "committed");
        assertThat(committed).isPositive();
        assertThat(store.probe()).isTrue();
      }
      for (int i = 0; i < 2; i++) { // both pooled connections
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
            ResultSet rs = st.executeQuery("SHOW search_path")) {
          rs.next();
          assertThat(rs.getString(1)).isEqualTo(before);
        }
      }
      try (Connection c = ds.getConnection(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM tether_work_items")) {
        rs.next();
        assertThat(rs.getInt(1)).as("the application's own table is untouched").isZero();
      }
    }
    assertThat(tablesIn(tetherSchema)).contains("tether_work_items", "tether_work_item_checkpoints");
  }

  @Test
  void aSchemaThatIsNotAPlainIdentifierIsRefused() {
    assertThatThrownBy(() -> TetherStoreConfig.builder().schema("x; DROP TABLE y"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unquoted SQL identifier");
  }

  @Test
  void sqliteRefusesASchema() {
    assertThatThrownBy(() -> TetherStore.open("jdbc:sqlite::memory:", TetherStoreConfig.builder().schema("s").build()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("SQLite has no schemas");
  }
}
