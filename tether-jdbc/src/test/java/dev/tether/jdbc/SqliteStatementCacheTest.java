package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The group committer's statements stay prepared across groups on SQLite: later groups still
 * refuse stale completions alone (no parameter of an earlier group left bound), acquisitions
 * still redeliver expired leases (the probe for expired leases), and statements of a closed
 * connection are dropped.
 */
class SqliteStatementCacheTest extends StoreTestBase {
  static final Duration LEASE = Duration.ofSeconds(30);

  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }

  @Test
  void laterGroupsOnCachedStatementsRefuseStaleCompletionsAloneAndStillAcquire() {
    assertThat(((SqliteEngine) store.storeEngine()).statementCache()).as("the store's own SQLite pool caches statements").isNotNull();
    LeaseManager w = new LeaseManager(store, "w");
    List<Long> ids = w.enqueueAll(List.of(
        NewWorkItem.of("q", "a"), NewWorkItem.of("q", "b"), NewWorkItem.of("q", "c"), NewWorkItem.of("q", "d")));
    for (int round = 0; round < 2; round++) {
      long first = ids.get(2 * round);
      long second = ids.get(2 * round + 1);
      List<Lease> held = w.acquire(AcquireRequest.batch("q", LEASE, 2));
      assertThat(held).extracting(Lease::itemId).containsExactly(first, second);
      GroupCommitter.Completion good =
          new GroupCommitter.Completion(first, held.get(0).token(), null, clock);
      GroupCommitter.Completion stale =
          new GroupCommitter.Completion(second, held.get(1).token() ^ 1, null, clock);
      store.committer().submitAll(List.of(good, stale));
      assertThat(good.error).as("round %d", round).isNull();
      assertThat(stale.error).as("round %d", round).isInstanceOf(LeaseConflictException.class);
      assertThat(w.find(first).orElseThrow().status()).isEqualTo(WorkStatus.COMPLETED);
      WorkItem kept = w.find(second).orElseThrow();
      assertThat(kept.status()).isEqualTo(WorkStatus.IN_PROGRESS);
      assertThat(kept.leaseToken()).isEqualTo(held.get(1).token());
    }
    assertThat(((SqliteEngine) store.storeEngine()).statementCache().connections()).isPositive();
  }

  @Test
  void aGroupAcquisitionAfterCachedOnesRedeliversAnExpiredLease() {
    LeaseManager w = new LeaseManager(store, "w");
    List<Long> ids = w.enqueueAll(List.of(NewWorkItem.of("q", "a"), NewWorkItem.of("q", "b")));
    Lease first = w.acquire("q", LEASE).orElseThrow();
    assertThat(first.itemId()).isEqualTo(ids.get(0));
    clock.advance(LEASE.plusSeconds(1));
    GroupCommitter.Completion acquisition =
        GroupCommitter.Completion.acquisition(AcquireRequest.batch("q", LEASE, 5), "again", clock);
    store.committer().submitAll(List.of(acquisition));
    assertThat(acquisition.error).isNull();
    assertThat(acquisition.leases).extracting(Lease::itemId).containsExactly(ids.get(0), ids.get(1));
    WorkItem redelivered = w.find(ids.get(0)).orElseThrow();
    assertThat(redelivered.deliveryCount()).isEqualTo(2);
    assertThat(redelivered.leaseHolder()).isEqualTo("again");
    // and with nothing expired, nothing more is taken
    GroupCommitter.Completion none =
        GroupCommitter.Completion.acquisition(AcquireRequest.batch("q", LEASE, 5), "more", clock);
    store.committer().submitAll(List.of(none));
    assertThat(none.leases).isEmpty();
  }

  @Test
  void aFailedTransactionDropsItsConnectionsCachedStatementsAndLaterGroupsWork() throws Exception {
    // After SQLITE_FULL the driver had finalized a cached statement, and every later group on
    // that connection failed with "statement is not executing" (SqliteDiskFullIT, which pins the
    // whole case). A failed transaction now drops the connection's cached statements.
    StatementCache cache = new StatementCache();
    String url = db.url().startsWith("jdbc:") ? db.url() : "jdbc:sqlite:" + db.url();
    try (Connection c = DriverManager.getConnection(url)) {
      PreparedStatement before;
      try (StatementCache.Stmt st = StatementCache.prepare(cache, c, "SELECT 1")) {
        before = st.ps();
      }
      cache.invalidate(c);
      assertThat(before.isClosed()).isTrue();
      assertThat(cache.connections()).isZero();
      try (StatementCache.Stmt st = StatementCache.prepare(cache, c, "SELECT 1")) {
        assertThat(st.ps()).isNotSameAs(before);
        try (ResultSet rs = st.ps().executeQuery()) {
          assertThat(rs.next()).isTrue();
        }
      }
    }
    // and through the store: a group that fails inside SQLite, then groups that work
    LeaseManager w = new LeaseManager(store, "w");
    List<Long> ids = w.enqueueAll(List.of(NewWorkItem.of("q", "a"), NewWorkItem.of("q", "b")));
    List<Lease> held = w.acquire(AcquireRequest.batch("q", LEASE, 2));
    try (Connection admin = DriverManager.getConnection(url); Statement st = admin.createStatement()) {
      st.execute("CREATE TRIGGER fail_step BEFORE UPDATE OF status ON tether_work_items WHEN NEW.id = "
          + ids.get(0) + " AND NEW.status = 'completed' BEGIN SELECT json('not json'); END");
    }
    GroupCommitter.Completion failing =
        new GroupCommitter.Completion(ids.get(0), held.get(0).token(), null, clock);
    store.committer().submitAll(List.of(failing));
    assertThat(failing.error).isInstanceOf(TetherStoreException.class).hasMessageContaining("JSON");
    try (Connection admin = DriverManager.getConnection(url); Statement st = admin.createStatement()) {
      st.execute("DROP TRIGGER fail_step");
    }
    for (int i = 0; i < 2; i++) {
      GroupCommitter.Completion next =
          new GroupCommitter.Completion(ids.get(i), held.get(i).token(), null, clock);
      store.committer().submitAll(List.of(next));
      assertThat(next.error).as("completion of item %d after the failed group", ids.get(i)).isNull();
    }
    assertThat(w.find(ids.get(1)).orElseThrow().status()).isEqualTo(WorkStatus.COMPLETED);
  }

  @Test
  void reusesAStatementPerConnectionAndDropsThoseOfClosedConnections() throws Exception {
    StatementCache cache = new StatementCache();
    String url = db.url().startsWith("jdbc:") ? db.url() : "jdbc:sqlite:" + db.url();
    try (Connection other = DriverManager.getConnection(url)) {
      Connection c = DriverManager.getConnection(url);
      PreparedStatement once;
      try (StatementCache.Stmt st = StatementCache.prepare(cache, c, "SELECT ? + 1")) {
        once = st.ps();
        once.setInt(1, 41);
        try (ResultSet rs = once.executeQuery()) {
          rs.next();
          assertThat(rs.getInt(1)).isEqualTo(42);
        }
      }
      try (StatementCache.Stmt st = StatementCache.prepare(cache, c, "SELECT ? + 1")) {
        assertThat(st.ps()).isSameAs(once);
        assertThat(once.getParameterMetaData().getParameterCount()).isEqualTo(1);
      }
      assertThat(once.isClosed()).isFalse();
      c.close();
      try (StatementCache.Stmt st = StatementCache.prepare(cache, other, "SELECT 2")) {
        try (ResultSet rs = st.ps().executeQuery()) {
          rs.next();
          assertThat(rs.getInt(1)).isEqualTo(2);
        }
      }
      assertThat(cache.connections()).as("the closed connection's entry is dropped").isEqualTo(1);
      cache.clear();
      assertThat(cache.connections()).isZero();
    }
    // without a cache a statement is prepared for one use and closed
    try (Connection c = DriverManager.getConnection(url)) {
      PreparedStatement ps;
      try (StatementCache.Stmt st = StatementCache.prepare(null, c, "SELECT 1")) {
        ps = st.ps();
      }
      assertThat(ps.isClosed()).isTrue();
    }
    try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
      assertThat(s.execute("SELECT 1")).isTrue();
    }
  }
}
