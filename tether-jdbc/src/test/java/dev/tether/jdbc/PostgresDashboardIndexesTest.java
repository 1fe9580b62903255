package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PostgresDashboardIndexesTest extends DashboardIndexesCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }

  /** The on-disk size of both dashboard indexes, in bytes (a B-tree never shrinks without a vacuum). */
  private long dashboardIndexBytes() throws Exception {
    try (Connection c = store.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT pg_relation_size('tether_work_items_status_id')"
            + " + pg_relation_size('tether_work_items_queue_status_id')");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void acquisitionsWriteNoEntryIntoTheDashboardsIndexesAndCompletionsDo() throws Exception {
    LeaseManager w = new LeaseManager(store, "w");
    List<NewWorkItem> items = new ArrayList<>();
    for (int i = 0; i < 3000; i++) {
      items.add(NewWorkItem.of("q", "x"));
    }
    w.enqueueAll(items);
    long pending = dashboardIndexBytes();
    List<Lease> held = new ArrayList<>();
    while (held.size() < items.size()) {
      held.addAll(w.acquire(AcquireRequest.batch("q", Duration.ofMinutes(5), 500)));
    }
    // 3,000 entries of in-progress rows would have needed new pages (the schema before version 9)
    assertThat(dashboardIndexBytes()).isEqualTo(pending);
    for (Lease l : held) {
      w.complete(l.itemId(), l.token(), null);
    }
    // the instrument sees entries: the completed rows have theirs
    assertThat(dashboardIndexBytes()).isGreaterThan(pending);
  }
}
