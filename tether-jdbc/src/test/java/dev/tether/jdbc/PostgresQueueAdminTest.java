package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class PostgresQueueAdminTest extends QueueAdminCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }

  /** Backends of this database waiting for a lock. */
  private static int waitingForALock(Connection c) throws Exception {
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_stat_activity"
            + " WHERE datname = current_database() AND wait_event_type = 'Lock'")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  @Test
  void aRedriveWaitingForAnotherOperatorsRedriveAndCancelReadsWhatTheyCommitted() throws Exception {
    LeaseManager lm = new LeaseManager(store, "op");
    long id = lm.enqueue(NewWorkItem.builder("q").input("x").maxAttempts(3).build());
    assertThat(new QueueAdmin(store).cancel(id, "first")).isTrue();

    try (Connection other = DriverManager.getConnection(db.url());
        Connection watcher = DriverManager.getConnection(db.url())) {
      // operator B: requeues with a budget of 10 and cancels again, one transaction, not committed
      other.setAutoCommit(false);
      assertThat(store.sql().operatorActions().redrive(other, id, 10, clock.instant())).isTrue();
      assertThat(store.sql().operatorActions().cancel(other, id, "second", clock.instant())).isTrue();
      // operator A: requeues with the item's own budget, waiting for B's row lock
      CompletableFuture<Boolean> a = CompletableFuture.supplyAsync(() -> lm.redrive(id));
      await().atMost(Duration.ofSeconds(30)).until(() -> waitingForALock(watcher) >= 1);
      other.commit();
      assertThat(a.get(30, TimeUnit.SECONDS)).isTrue();
    }
    // A read the item as B left it (cancelled with a budget of 10), not as it was before B
    WorkItem w = lm.find(id).orElseThrow();
    assertThat(w.status()).isEqualTo(WorkStatus.PENDING);
    assertThat(w.maxAttempts()).isEqualTo(10);
  }
}
