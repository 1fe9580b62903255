package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class PostgresLeaseManagerTest extends LeaseManagerCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }

  @Test
  void onTheSettableClockTheFencingAndExpiryScenariosRunTheFusedGroupStatement() {
    // The suite's store runs on a settable clock, which must change the instants the statements
    // use, never which statements run: production's acquisitions (group commit on, no filters)
    // are the group committer's fused statement, and its check must see an expired lease at the
    // clock's instant and hand over to the full acquisition.
    long before = store.committer().fusedStatements();
    staleWorkersRenewAckAndReleaseAreRefusedAfterTakeover();
    long afterFencing = store.committer().fusedStatements();
    assertThat(afterFencing - before).as("fused statements of the takeover scenario").isGreaterThanOrEqualTo(2);
    poisonItemThatKillsItsWorkerEveryTimeEndsFailedAfterMaxAttempts();
    assertThat(store.committer().fusedStatements() - afterFencing)
        .as("fused statements of the expiry scenario").isGreaterThanOrEqualTo(4);
  }
}
