package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;

/**
 * The server process behind a store's connection keeps the memory a group statement frees
 * ({@link TetherStoreConfig.Builder#retainBackendMemory}): counted as the process's minor page
 * faults per group of eight single enqueues, read from {@code /proc} (the test's PostgreSQL runs
 * on this host). Without the request, a glibc server shrinks its heap after each group and
 * faults it back in at the next: dozens of faults per statement.
 */
class PostgresBackendMemoryTest {
  private static final int GROUPS = 200;

  private TestDatabase db;

  @BeforeEach
  void database() {
    db = TestDatabase.postgres();
  }

  @AfterEach
  void dropDatabase() {
    db.close();
  }

  /** Minor page faults per group statement of the one server process behind the store's pool. */
  private double faultsPerGroup(boolean retain) throws Exception {
    TetherStoreConfig config =
        TetherStoreConfig.builder().maximumPoolSize(1).retainBackendMemory(retain).build();
    try (TetherStore store = db.open(config)) {
      PostgresEngine engine = (PostgresEngine) store.storeEngine();
      int[] pidAndPort = store.read("the server process", c -> {
        try (Statement st = c.createStatement();
            ResultSet rs = st.executeQuery("SELECT pg_backend_pid(), inet_client_port()")) {
          rs.next();
          return new int[] {rs.getInt(1), rs.getInt(2)};
        }
      });
      int pid = pidAndPort[0];
      Path stat = Path.of("/proc/" + pid + "/stat");
      Path cmdline = Path.of("/proc/" + pid + "/cmdline");
      // a server process names its client's port ("postgres: user db 127.0.0.1(PORT) idle")
      assumeTrue(Files.exists(cmdline) && Files.readString(cmdline).contains("(" + pidAndPort[1] + ")"),
          "the test's PostgreSQL (TETHER_TEST_PG_URL) runs on another host or in another process"
              + " namespace: its process " + pid + " cannot be observed from here");
      writeGroups(store, engine, 20); // the statement prepared and planned, the table's first pages
      long before = minorFaults(stat);
      writeGroups(store, engine, GROUPS);
      long after = minorFaults(stat);
      assertThat(engine.retainingConnections()).isEqualTo(retain ? 1 : 0);
      System.out.printf("FIGURE server process %s retainBackendMemory: %s%n", retain ? "with" : "without",
          Files.readAllLines(Path.of("/proc/" + pid + "/status")).stream()
              .filter(l -> l.startsWith("VmRSS") || l.startsWith("VmData")).toList());
      return (after - before) / (double) GROUPS;
    }
  }

  private static void writeGroups(TetherStore store, PostgresEngine engine, int groups) {
    for (int g = 0; g < groups; g++) {
      List<EnqueueGroups.Pending> members = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        members.add(new EnqueueGroups.Pending(store, NewWorkItem.of("q", "x"), null));
      }
      engine.enqueueGroups().submitAll(members);
      for (EnqueueGroups.Pending m : members) {
        assertThat(m.result()).isPositive();
      }
    }
  }

  /** Field 10 of {@code /proc/PID/stat}, after the command name (which may hold spaces). */
  private static long minorFaults(Path stat) throws IOException {
    String s = Files.readString(stat);
    String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(f[7]);
  }

  /**
   * The request never ends a transaction it did not open, and leaves none open: on a connection
   * of a caller's pool that does not auto-commit, the pool's setup or the caller's work may be in
   * an open transaction, which the rollback ending the request's own transaction would undo.
   */
  @Test
  void theRequestNeverEndsATransactionItDidNotOpen() throws Exception {
    try (TetherStore store = db.open(TetherStoreConfig.builder().maximumPoolSize(1).build());
        Connection c = DriverManager.getConnection(db.url())) {
      PostgresEngine engine = (PostgresEngine) store.storeEngine();
      int asked = engine.retainingConnections();
      c.setAutoCommit(false);
      try (Statement st = c.createStatement()) {
        st.execute("CREATE TEMP TABLE caller_work (v int)");
        st.execute("INSERT INTO caller_work VALUES (1)");
      }
      engine.prepare(c);
      assertThat(rows(c)).as("the caller's uncommitted work").isEqualTo(1);
      assertThat(engine.retainingConnections()).as("not asked while a transaction is open").isEqualTo(asked);
      c.commit();
      engine.prepare(c);
      assertThat(engine.retainingConnections()).isEqualTo(asked + 1);
      assertThat(c.unwrap(BaseConnection.class).getTransactionState()).isEqualTo(TransactionState.IDLE);
      assertThat(rows(c)).isEqualTo(1);
    }
  }

  private static int rows(Connection c) throws Exception {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT count(*) FROM caller_work")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  @Test
  void aGroupStatementNoLongerShrinksAndRegrowsTheServerProcesssHeap() throws Exception {
    // The first store of the test faults in more than the next ones (7.0 to 7.8 per group against
    // 4.5 to 6.3 on 27 Nov, without the request each time): it is left out, and the run with the
    // request is compared with the runs just before and after it.
    faultsPerGroup(false);
    double before = faultsPerGroup(false);
    double with = faultsPerGroup(true);
    double after = faultsPerGroup(false);
    double without = Math.min(before, after);
    System.out.printf("FIGURE minor page faults of the server process per group of 8 enqueues:"
        + " %.1f and %.1f without, %.1f with retainBackendMemory%n", before, after, with);
    assumeTrue(without >= 3, "this server's C library does not return the freed heap after each"
        + " statement (" + without + " faults per group without the request): nothing to show");
    // Other sessions' traffic adds about as many faults to every run: the request must take away
    // most of them (0.6 with it against 4.5 to 5.6 without; a request that does nothing gave 4.8
    // and 5.7 between 4.7 and 6.3, and a fixed difference of 3 from the first run, kept before,
    // failed once at 3.7 against 0.8).
    assertThat(with).isLessThan(without / 2);
  }
}
