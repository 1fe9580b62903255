package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Schema migrations on every engine (subclass per engine). */
abstract class MigrationCompatibilityTest {
  private TestDatabase db;

  protected abstract TestDatabase newDatabase();

  @BeforeEach
  void create() {
    db = newDatabase();
  }

  @AfterEach
  void drop() {
    db.close();
  }

  @Test
  void concurrentFirstOpensMigrateExactlyOnce() throws Exception {
    int n = 6;
    ExecutorService pool = Executors.newFixedThreadPool(n);
    CountDownLatch go = new CountDownLatch(1);
    List<Future<TetherStore>> opened = new ArrayList<>();
    try {
      for (int i = 0; i < n; i++) {
        opened.add(pool.submit(() -> {
          go.await();
          return db.open(TetherStoreConfig.builder().maximumPoolSize(2).build());
        }));
      }
      go.countDown();
      List<TetherStore> stores = new ArrayList<>();
      for (Future<TetherStore> f : opened) {
        stores.add(f.get());
      }
      try (Connection c = stores.get(0).dataSource().getConnection();
          Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT version FROM tether_schema_version ORDER BY version")) {
        List<Integer> versions = new ArrayList<>();
        while (rs.next()) {
          versions.add(rs.getInt(1));
        }
        assertThat(versions).hasSize(Migrations.LATEST_VERSION).doesNotHaveDuplicates();
      }
      new LeaseManager(stores.get(1), "w").enqueue(NewWorkItem.of("q", "works"));
      stores.forEach(TetherStore::close);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aSchemaNewerThanTheCodeIsRefusedWithAClearError() throws Exception {
    try (TetherStore store = db.open(TetherStoreConfig.defaults());
        Connection c = store.dataSource().getConnection();
        Statement st = c.createStatement()) {
      st.execute("INSERT INTO tether_schema_version (version, description, applied_at_millis)"
          + " VALUES (" + (Migrations.LATEST_VERSION + 41) + ", 'from the future', 0)");
    }
    assertThatThrownBy(() -> db.open(TetherStoreConfig.defaults()))
        .isInstanceOfSatisfying(SchemaVersionException.class, e -> {
          assertThat(e.databaseVersion()).isEqualTo(Migrations.LATEST_VERSION + 41);
          assertThat(e.supportedVersion()).isEqualTo(Migrations.LATEST_VERSION);
        })
        .hasMessageContaining("Upgrade Tether");
  }

  @Test
  void reopeningAMigratedDatabaseKeepsItsData() {
    long id;
    try (TetherStore store = db.open(TetherStoreConfig.defaults())) {
      id = new LeaseManager(store, "w").enqueue(NewWorkItem.of("q", "kept"));
    }
    try (TetherStore store = db.open(TetherStoreConfig.defaults())) {
      assertThat(new QueueMonitor(store).item(id)).get().extracting(WorkItem::inputAsString).isEqualTo("kept");
    }
  }

  /** A connection to the test database without a store (no migration). */
  private Connection raw() throws Exception {
    String url = db.url();
    return DriverManager.getConnection(url.startsWith("jdbc:") ? url : "jdbc:sqlite:" + url);
  }

  @Test
  void version2FlagsTheNotYetDuePendingItemsOfAVersion1DatabaseAsScheduled() throws Exception {
    boolean sqlite = db instanceof TestDatabase.Sqlite;
    String engine = sqlite ? "sqlite" : "postgres";
    String v1;
    try (InputStream in = Migrations.class.getResourceAsStream(
        "/dev/tether/jdbc/migrations/" + engine + "/V1__work_items.sql")) {
      v1 = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    String now = sqlite ? "CAST(unixepoch('subsec') * 1000 AS INTEGER)" : "now()";
    String hour = sqlite ? " + 3600000" : " + interval '1 hour'";
    try (Connection c = raw(); Statement st = c.createStatement()) {
      for (String sql : v1.split(";\\s*\\n")) {
        if (!sql.isBlank()) {
          st.execute(sql);
        }
      }
      st.execute("CREATE TABLE tether_schema_version (version INTEGER PRIMARY KEY,"
          + " description TEXT NOT NULL, applied_at_millis BIGINT NOT NULL)");
      st.execute("INSERT INTO tether_schema_version VALUES (1, 'V1__work_items.sql', 0)");
      String insert = "INSERT INTO work_items (queue, status, max_attempts, available_at, created_at, updated_at,"
          + " input_data) VALUES ('q', '%s', 3, %s, " + now + ", " + now + ", NULL)";
      st.execute(String.format(insert, "pending", now + hour)); // id 1: not yet due
      st.execute(String.format(insert, "pending", now)); // id 2: due
      st.execute(String.format(insert, "in_progress", now + hour)); // id 3: leased
    }
    try (TetherStore store = db.open(TetherStoreConfig.defaults());
        Connection c = store.dataSource().getConnection();
        Statement st = c.createStatement()) {
      List<Boolean> flags = new ArrayList<>();
      try (ResultSet rs = st.executeQuery("SELECT scheduled FROM tether_work_items ORDER BY id")) {
        while (rs.next()) {
          flags.add(rs.getBoolean(1));
        }
      }
      assertThat(flags).containsExactly(true, false, false);
      assertThat(new LeaseManager(store, "w").acquire(AcquireRequest.batch("q", Duration.ofMinutes(1), 10)))
          .extracting(Lease::itemId).containsExactly(2L);
    }
  }

  @Test
  void version3MovesTheTablesToTheirPrefixKeepingIdsAndChargingEarlierDeliveries() throws Exception {
    boolean sqlite = db instanceof TestDatabase.Sqlite;
    String engine = sqlite ? "sqlite" : "postgres";
    String now = sqlite ? "CAST(unixepoch('subsec') * 1000 AS INTEGER)" : "now()";
    try (Connection c = raw(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE tether_schema_version (version INTEGER PRIMARY KEY,"
          + " description TEXT NOT NULL, applied_at_millis BIGINT NOT NULL)");
      for (String script : List.of("V1__work_items.sql", "V2__scheduled.sql")) {
        String text;
        try (InputStream in = Migrations.class.getResourceAsStream(
            "/dev/tether/jdbc/migrations/" + engine + "/" + script)) {
          text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        for (String sql : text.split(";\\s*\\n")) {
          if (!sql.isBlank()) {
            st.execute(sql);
          }
        }
      }
      st.execute("INSERT INTO tether_schema_version VALUES (1, 'V1__work_items.sql', 0), (2, 'V2__scheduled.sql', 0)");
      String insert = "INSERT INTO work_items (queue, status, delivery_count, max_attempts, available_at,"
          + " created_at, updated_at) VALUES ('q', '%s', %d, 3, " + now + ", " + now + ", " + now + ")";
      st.execute(String.format(insert, "pending", 2)); // id 1: twice delivered, retrying
      st.execute(String.format(insert, "completed", 1)); // id 2
      st.execute(String.format(insert, "failed", 5)); // id 3: delivered past its budget
      st.execute(String.format(insert, "completed", 1)); // id 4, purged below
      st.execute("INSERT INTO work_item_checkpoints (item_id, kind, delivery_count, created_at)"
          + " VALUES (1, 'lease_expired', 1, " + now + ")");
      st.execute("DELETE FROM work_items WHERE id = 4");
    }
    try (TetherStore store = db.open(TetherStoreConfig.defaults())) {
      LeaseManager w = new LeaseManager(store, "w");
      assertThat(w.find(1).orElseThrow()).satisfies(i -> {
        assertThat(i.attempts()).as("earlier deliveries were all charged").isEqualTo(2);
        assertThat(i.checkpoints()).extracting(Checkpoint::kind).containsExactly("lease_expired");
      });
      assertThat(w.find(2).orElseThrow().status()).isEqualTo(WorkStatus.COMPLETED);
      assertThat(w.find(3).orElseThrow().attempts()).as("never above the budget").isEqualTo(3);
      assertThat(w.enqueue(NewWorkItem.of("q", "new"))).as("a purged id is never reused").isGreaterThan(4L);
      Lease l = w.acquire("q", Duration.ofMinutes(1)).orElseThrow();
      assertThat(l.itemId()).isEqualTo(1L);
      assertThat(l.attempt()).as("its last attempt").isEqualTo(3);
    }
    try (Connection c = raw(); Statement st = c.createStatement()) {
      assertThatThrownBy(() -> st.executeQuery("SELECT COUNT(*) FROM work_items"))
          .as("the old table is gone").isInstanceOf(java.sql.SQLException.class);
    }
  }

  private static final TetherStoreConfig VALIDATE =
      TetherStoreConfig.builder().migration(TetherStoreConfig.SchemaMigration.VALIDATE).build();

  private boolean hasVersionTable() throws Exception {
    try (Connection c = raw(); Statement st = c.createStatement()) {
      st.executeQuery("SELECT COUNT(*) FROM tether_schema_version").close();
      return true;
    } catch (java.sql.SQLException e) {
      return false;
    }
  }

  @Test
  void version8IndexesOnlyKeyedItemsAndKeepsTheirKeysUnique() throws Exception {
    boolean sqlite = db instanceof TestDatabase.Sqlite;
    String url = db.url().startsWith("jdbc:") ? db.url() : "jdbc:sqlite:" + db.url();
    StoreEngine engine = StoreEngine.forUrl(url, TetherStoreConfig.defaults());
    String now = sqlite ? "CAST(unixepoch('subsec') * 1000 AS INTEGER)" : "now()";
    try (Connection c = raw(); Statement st = c.createStatement()) {
      engine.initialize(c);
      Migrations.migrate(c, engine, 7);
      String insert = "INSERT INTO tether_work_items (queue, status, max_attempts, available_at, created_at,"
          + " updated_at, idempotency_key) VALUES ('q', 'pending', 3, " + now + ", " + now + ", " + now + ", %s)";
      st.execute(String.format(insert, "'k1'")); // id 1
      st.execute(String.format(insert, "NULL")); // id 2
      st.execute(String.format(insert, "NULL")); // id 3
    } finally {
      engine.close();
    }
    try (TetherStore store = db.open(TetherStoreConfig.defaults())) {
      LeaseManager m = new LeaseManager(store, "w");
      assertThat(m.enqueue(NewWorkItem.builder("q").idempotencyKey("k1").build()))
          .as("a key from before the migration still names its item").isEqualTo(1L);
      long k2 = m.enqueue(NewWorkItem.builder("q").idempotencyKey("k2").build());
      assertThat(m.enqueue(NewWorkItem.builder("q").idempotencyKey("k2").build())).isEqualTo(k2);
      assertThat(m.enqueue(NewWorkItem.builder("other").idempotencyKey("k2").build()))
          .as("keys are per queue").isNotEqualTo(k2);
      long keyless = m.enqueue(NewWorkItem.of("q", "no key"));
      assertThat(m.enqueue(NewWorkItem.of("q", "no key"))).isNotEqualTo(keyless);
      try (Connection c = store.dataSource().getConnection(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery(sqlite
              ? "SELECT sql FROM sqlite_master WHERE name = 'tether_work_items_idempotency_key'"
              : "SELECT indexdef FROM pg_indexes WHERE indexname = 'tether_work_items_idempotency_key'"
                  + " AND schemaname = current_schema()")) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getString(1)).containsIgnoringCase("UNIQUE")
            .containsIgnoringCase("idempotency_key IS NOT NULL");
        assertThat(rs.next()).isFalse();
      }
    }
  }

  @Test
  void validatingRefusesAMissingSchemaNamingTheVersionItNeedsAndCreatesNothing() throws Exception {
    assertThatThrownBy(() -> db.open(VALIDATE))
        .isInstanceOfSatisfying(SchemaVersionException.class, e -> {
          assertThat(e.databaseVersion()).isZero();
          assertThat(e.supportedVersion()).isEqualTo(Migrations.LATEST_VERSION);
        })
        .hasMessageContaining("tables are missing")
        .hasMessageContaining("needs version " + Migrations.LATEST_VERSION)
        .hasMessageContaining("tether.store.migrate=true");
    assertThat(hasVersionTable()).isFalse();
  }

  @Test
  void validatingRefusesAnOlderSchemaNamingBothVersionsThenAcceptsItOnceMigrated() throws Exception {
    int older = Migrations.LATEST_VERSION - 1;
    String url = db.url().startsWith("jdbc:") ? db.url() : "jdbc:sqlite:" + db.url();
    StoreEngine engine = StoreEngine.forUrl(url, TetherStoreConfig.defaults());
    try (Connection c = raw()) {
      engine.initialize(c);
      Migrations.migrate(c, engine, older);
    } finally {
      engine.close();
    }
    assertThatThrownBy(() -> db.open(VALIDATE))
        .isInstanceOfSatisfying(SchemaVersionException.class, e -> {
          assertThat(e.databaseVersion()).isEqualTo(older);
          assertThat(e.supportedVersion()).isEqualTo(Migrations.LATEST_VERSION);
        })
        .hasMessageContaining("at version " + older)
        .hasMessageContaining("needs version " + Migrations.LATEST_VERSION)
        .hasMessageContaining("nothing was changed");
    try (Connection c = raw(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT MAX(version) FROM tether_schema_version")) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getInt(1)).as("validating changed nothing").isEqualTo(older);
    }
    db.open(TetherStoreConfig.defaults()).close();
    try (TetherStore store = db.open(VALIDATE)) {
      assertThat(new LeaseManager(store, "w").enqueue(NewWorkItem.of("q", "after validation"))).isPositive();
    }
  }

  @Test
  void validatingStillRefusesASchemaNewerThanTheCode() throws Exception {
    db.open(TetherStoreConfig.defaults()).close();
    try (Connection c = raw(); Statement st = c.createStatement()) {
      st.execute("INSERT INTO tether_schema_version (version, description, applied_at_millis)"
          + " VALUES (" + (Migrations.LATEST_VERSION + 1) + ", 'from the future', 0)");
    }
    assertThatThrownBy(() -> db.open(VALIDATE)).isInstanceOf(SchemaVersionException.class)
        .hasMessageContaining("Upgrade Tether");
  }

  @Test
  void migrationNoneOpensWithoutTouchingTheSchema() throws Exception {
    TetherStoreConfig none =
        TetherStoreConfig.builder().migration(TetherStoreConfig.SchemaMigration.parse("false")).build();
    db.open(none).close();
    assertThat(hasVersionTable()).isFalse();
  }

  @Test
  void migrationSettingsParseAsTheStarterAndCliSpellThem() {
    assertThat(TetherStoreConfig.SchemaMigration.parse("TRUE")).isEqualTo(TetherStoreConfig.SchemaMigration.MIGRATE);
    assertThat(TetherStoreConfig.SchemaMigration.parse("validate")).isEqualTo(TetherStoreConfig.SchemaMigration.VALIDATE);
    assertThat(TetherStoreConfig.SchemaMigration.parse("false")).isEqualTo(TetherStoreConfig.SchemaMigration.NONE);
    assertThatThrownBy(() -> TetherStoreConfig.SchemaMigration.parse("sometimes"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("true, false or validate");
  }
}
