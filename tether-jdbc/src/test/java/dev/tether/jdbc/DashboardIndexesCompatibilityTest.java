package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The dashboard's indexes hold no in-progress rows (schema version 9): items in progress are still
 * found, counted and listed (from the leased indexes), and on a large store every listing and count
 * reads through an index, on every engine (subclass per engine).
 */
abstract class DashboardIndexesCompatibilityTest extends StoreTestBase {
  private static final Duration LEASE = Duration.ofMinutes(5);

  private List<Long> enqueue(String queue, int n) {
    List<NewWorkItem> items = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      items.add(NewWorkItem.of(queue, queue + i));
    }
    return new LeaseManager(store, "w").enqueueAll(items);
  }

  private static List<Long> ids(List<WorkItem> items) {
    List<Long> out = new ArrayList<>();
    items.forEach(w -> out.add(w.id()));
    return out;
  }

  @Test
  void itemsInProgressAreFoundCountedAndListedNewestFirst() {
    LeaseManager w = new LeaseManager(store, "w");
    enqueue("a", 2);
    List<Long> m = enqueue("m", 3); // every item of queue m will be in progress
    List<Long> z = enqueue("z", 1);
    assertThat(w.acquire(AcquireRequest.batch("m", LEASE, 3))).hasSize(3);
    Lease done = w.acquire(AcquireRequest.one("z", LEASE)).get(0);
    w.complete(done.itemId(), done.token(), null);
    List<Long> mNewestFirst = List.of(m.get(2), m.get(1), m.get(0));

    OverviewQueries o = new OverviewQueries(store);
    assertThat(o.queues(10)).containsExactly("a", "m", "z");
    assertThat(o.counts(List.of("m"), 10).get("m").get(WorkStatus.IN_PROGRESS)).isEqualTo(new CappedCount(3, false));
    assertThat(o.counts(List.of("m"), 10).get("m").get(WorkStatus.PENDING)).isEqualTo(new CappedCount(0, false));
    assertThat(o.totals(2).get(WorkStatus.IN_PROGRESS)).isEqualTo(new CappedCount(2, true));
    assertThat(o.totals(10).get(WorkStatus.COMPLETED)).isEqualTo(new CappedCount(1, false));
    assertThat(ids(o.page(new ItemPageRequest("m", null, null, null, 10)).items())).containsExactlyElementsOf(mNewestFirst);
    assertThat(ids(o.page(new ItemPageRequest(null, WorkStatus.IN_PROGRESS, null, null, 10)).items()))
        .containsExactlyElementsOf(mNewestFirst);
    ItemPage first = o.page(new ItemPageRequest("m", WorkStatus.IN_PROGRESS, null, null, 2));
    assertThat(ids(first.items())).containsExactly(m.get(2), m.get(1));
    assertThat(ids(o.page(new ItemPageRequest("m", WorkStatus.IN_PROGRESS, null, first.nextBeforeId(), 2)).items()))
        .containsExactly(m.get(0));
    assertThat(ids(o.page(new ItemPageRequest(null, WorkStatus.COMPLETED, null, null, 10)).items())).containsExactlyElementsOf(z);
    QueueMonitor monitor = new QueueMonitor(store);
    assertThat(ids(monitor.items(new ItemQuery("m", WorkStatus.IN_PROGRESS, ItemQuery.Order.NEWEST_FIRST, 10))))
        .containsExactlyElementsOf(mNewestFirst);
    assertThat(ids(monitor.items(new ItemQuery(null, WorkStatus.PENDING, ItemQuery.Order.NEWEST_FIRST, 10)))).hasSize(2);
  }

  @Test
  void onALargeStoreEveryListingAndCountReadsThroughAnIndex() throws Exception {
    enqueue("a", 50);
    enqueue("b", 30);
    new LeaseManager(store, "w").acquire(AcquireRequest.batch("b", LEASE, 20));
    try (Connection c = store.dataSource().getConnection(); Statement st = c.createStatement()) {
      // 20,000 finished items, newer than everything above: what a store that ran for a while holds
      st.execute(engine() == TetherStore.Engine.POSTGRESQL
          ? "INSERT INTO tether_work_items (queue, status, priority, delivery_count, max_attempts, available_at,"
              + " created_at, updated_at, completed_at) SELECT CASE WHEN i % 2 = 0 THEN 'a' ELSE 'c' END,"
              + " CASE WHEN i % 1000 = 0 THEN 'failed' ELSE 'completed' END, 0, 1, 3, now(), now(), now(), now()"
              + " FROM generate_series(1, 20000) i"
          : "WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 20000)"
              + " INSERT INTO tether_work_items (queue, status, priority, delivery_count, max_attempts, available_at,"
              + " created_at, updated_at, completed_at) SELECT CASE WHEN i % 2 = 0 THEN 'a' ELSE 'c' END,"
              + " CASE WHEN i % 1000 = 0 THEN 'failed' ELSE 'completed' END, 0, 1, 3, 0, 0, 0, 0 FROM g");
      if (engine() == TetherStore.Engine.POSTGRESQL) {
        st.execute("ANALYZE tether_work_items"); // as autovacuum would have by now
      }
      List<String[]> plans = new ArrayList<>();
      plans.add(plan(c, OverviewQueries.QUEUES, ps -> ps.setInt(1, 10)));
      // Completed items are nearly every row here: for them a planner may rightly read the first
      // rows of a scan, which stops at the limit. The other statuses are rare and must not be.
      WorkStatus[] rare = {WorkStatus.PENDING, WorkStatus.IN_PROGRESS, WorkStatus.FAILED, WorkStatus.CANCELLED};
      for (String queue : new String[] {null, "b"}) {
        for (WorkStatus s : rare) {
          plans.add(plan(c, "SELECT COUNT(*) FROM (SELECT 1 FROM tether_work_items WHERE "
              + (queue != null ? "queue = '" + queue + "' AND " : "") + OverviewQueries.statusTerm(s) + " LIMIT 101) x",
              ps -> { }));
        }
        for (WorkStatus s : new WorkStatus[] {null, WorkStatus.PENDING, WorkStatus.IN_PROGRESS, WorkStatus.FAILED}) {
          for (Long before : new Long[] {null, 1_000_000L}) { // a page after the first: every id is below it
            ItemPageRequest r = new ItemPageRequest(queue, s, null, before, 10);
            plans.add(plan(c, OverviewQueries.window(r, 11, "id"), ps -> OverviewQueries.bindWindow(ps, 1, r, 11)));
          }
        }
      }
      // the other reads and deletes of a queue's or a status's items (QueueMonitor, JdbcMailbox,
      // LeaseManager.redriveAll, purges)
      plans.add(plan(c, MonitorQueries.FAILED, ps -> {
        ps.setString(1, "b");
        ps.setInt(2, 10);
      }));
      plans.add(plan(c, ItemReads.FAILED_IDS, ps -> ps.setString(1, "b")));
      plans.add(plan(c, MonitorQueries.queueNewestFirstSql(), ps -> {
        int i = 1;
        for (int k = 0; k < WorkStatus.values().length; k++) {
          ps.setString(i++, "b");
          ps.setInt(i++, 10);
        }
        ps.setInt(i, 10);
      }));
      plans.add(plan(c, Purges.DELETE_UNFINISHED, ps -> ps.setString(1, "b")));
      plans.add(plan(c, Purges.DELETE_COMPLETED,
          ps -> store.storeEngine().setInstant(ps, 1, java.time.Instant.parse("2000-01-01T00:00:00Z"))));
      plans.add(plan(c, MonitorQueries.retryDistributionSql(true), ps -> ps.setString(1, "b")));
      if (engine() == TetherStore.Engine.SQLITE) {
        // a count of every finished row reads every row of an index on SQLite; PostgreSQL may
        // rightly scan the table for it, as before schema 9
        plans.add(plan(c, MonitorQueries.COUNTS_BY_STATUS, ps -> { }));
        plans.add(plan(c, MonitorQueries.retryDistributionSql(false), ps -> { }));
      }
      for (String[] p : plans) {
        assertThat(p[1]).as("the plan of %s", p[0]).satisfies(plan -> readsThroughAnIndex(p[0], plan));
      }
    }
  }

  private TetherStore.Engine engine() {
    return store.storeEngine().kind();
  }

  /**
   * Fails when the plan reads every row of the items table, or (for a statement that selects by
   * status) walks the table in id order past the rows it filters out: only a statement over every
   * status may take the newest rows of the primary key.
   */
  private void readsThroughAnIndex(String sql, String plan) {
    boolean byStatus = sql.contains("status");
    if (engine() == TetherStore.Engine.POSTGRESQL) {
      assertThat(plan).doesNotContain("Seq Scan on tether_work_items");
      if (byStatus) {
        assertThat(plan).doesNotContain("tether_work_items_pkey");
      }
    } else if (byStatus) {
      // SQLite's id is the rowid: a walk of the table is "SCAN tether_work_items" with no index,
      // or a range of the rowid below the keyset bound
      assertThat(plan).doesNotContainPattern("SCAN tether_work_items(\n|$)");
      assertThat(plan).doesNotContain("INTEGER PRIMARY KEY");
    }
  }

  @FunctionalInterface
  private interface Binder {
    void bind(PreparedStatement ps) throws SQLException;
  }

  /** {@code sql} and its plan text, with its parameters bound (planned for these values). */
  private String[] plan(Connection c, String sql, Binder binder) throws SQLException {
    boolean pg = engine() == TetherStore.Engine.POSTGRESQL;
    try (PreparedStatement ps = c.prepareStatement((pg ? "EXPLAIN " : "EXPLAIN QUERY PLAN ") + sql)) {
      store.storeEngine().plannedPerExecution(ps);
      binder.bind(ps);
      StringBuilder out = new StringBuilder();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.append(rs.getString(pg ? 1 : 4)).append('\n');
        }
      }
      return new String[] {sql, out.toString()};
    }
  }
}
