package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

class SqliteScheduledItemsTest extends ScheduledItemsCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }

  private static String queryPlan(Connection c, String sql) throws Exception {
    StringBuilder plan = new StringBuilder();
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("EXPLAIN QUERY PLAN " + sql)) {
      while (rs.next()) {
        plan.append(rs.getString("detail")).append('\n');
      }
    }
    return plan.toString();
  }

  @Test
  void thePickSearchesTheReadyIndexAndThePromotionTheScheduledOne() throws Exception {
    // SQLite uses a partial index only when the query's WHERE contains the index's terms.
    try (Connection c = store.dataSource().getConnection()) {
      assertThat(queryPlan(c, Acquisitions.candidatesSql(store.storeEngine(), true, false, false)))
          .contains("USING INDEX tether_work_items_pending");
      assertThat(queryPlan(c, store.storeEngine().promoteSql())).contains("INDEX tether_work_items_scheduled");
    }
  }
}
