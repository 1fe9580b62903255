package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class PostgresScheduledItemsTest extends ScheduledItemsCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }

  @Test
  void theOneStatementPickReadsTheReadyIndexAndProbesTheScheduledOneWhateverTheDelayedBacklog() throws Exception {
    // Before version 2 every pick stepped over each not-yet-due item ahead of the first due one
    // (measured: 100,000 delayed items made each acquisition about 46 ms slower).
    LeaseManager w = new LeaseManager(store, "w");
    enqueueLater(3000, Duration.ofHours(1));
    w.enqueueAll(List.of(NewWorkItem.of("q", "now-1"), NewWorkItem.of("q", "now-2")));
    try (Connection c = store.dataSource().getConnection()) {
      try (Statement st = c.createStatement()) {
        st.execute("ANALYZE tether_work_items");
      }
      String plan = PostgresThroughputTest.planOfAcquireFast(c, "q");
      String pick = plan.substring(plan.indexOf("CTE pick"), plan.indexOf("CTE upd"));
      assertThat(pick).contains("tether_work_items_pending").doesNotContain("Seq Scan");
      String check = plan.substring(plan.indexOf("CTE x"), plan.indexOf("CTE pick"));
      assertThat(check).contains("tether_work_items_scheduled").doesNotContain("Seq Scan");
    }
    assertThat(w.acquire(AcquireRequest.batch("q", LEASE, 10))).hasSize(2);
  }

  @Test
  void theFullAcquisitionsPromotionProbesTheScheduledIndexAndUpdatesByPrimaryKey() throws Exception {
    LeaseManager w = new LeaseManager(store, "w");
    enqueueLater(3000, Duration.ofHours(1));
    try (Connection c = store.dataSource().getConnection()) {
      try (Statement st = c.createStatement()) {
        st.execute("ANALYZE tether_work_items");
      }
      try (PreparedStatement ps = c.prepareStatement(
          "EXPLAIN " + PostgresEngine.PROMOTE)) {
        ps.setString(1, "q");
        ps.setObject(2, java.time.OffsetDateTime.ofInstant(clock.instant(), java.time.ZoneOffset.UTC)); // none due
        assertThat(PostgresThroughputTest.explain(ps)).contains("tether_work_items_scheduled").contains("tether_work_items_pkey")
            .doesNotContain("Seq Scan");
      }
    }
  }

  @Test
  void onTheDatabaseClockAGroupStatementFindingADueScheduledItemDeliversItThroughTheFullAcquisition()
      throws Exception {
    try (TetherStore dbClock = db.open(TetherStoreConfig.defaults())) {
      long id = new LeaseManager(dbClock, "w").enqueue(NewWorkItem.of("q", "due"));
      setScheduled(id, true); // due, still flagged: the group statement must not take it from the ready index
      GroupCommitter.Completion acquisition =
          GroupCommitter.Completion.acquisition(AcquireRequest.batch("q", LEASE, 5), "fused", null);
      long fusedBefore = dbClock.committer().fusedStatements();

      dbClock.committer().submitAll(List.of(acquisition));

      assertThat(dbClock.committer().fusedStatements()).isEqualTo(fusedBefore + 1);
      assertThat(acquisition.error).isNull();
      assertThat(acquisition.leases).extracting(Lease::itemId).containsExactly(id);
      assertThat(scheduled(id)).isFalse();
    }
  }
}

