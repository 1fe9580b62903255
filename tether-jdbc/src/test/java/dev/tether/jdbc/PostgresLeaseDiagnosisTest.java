package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A group's refused completions are diagnosed after its statement. When that statement was
 * auto-committed (the group commit's one-statement paths on PostgreSQL), a connection lost in the
 * moment between must not report the committed members failed: their items are completed, and a
 * caller told otherwise would let their leases run out and be charged. Inside a transaction the
 * failure fails the whole, which commits nothing. The connection is cut by a real TCP proxy.
 */
class PostgresLeaseDiagnosisTest {
  private static final Duration LEASE = Duration.ofMinutes(5);
  private static final Instant NOW = Instant.now();
  private final PostgresTestSchema db = new PostgresTestSchema("tether_t_");
  private TetherStore store;
  private LeaseManager leases;

  @BeforeEach
  void open() {
    store = TetherStore.open(db.url(), TetherStoreConfig.builder().notifications(false).build());
    leases = new LeaseManager(store, "w");
  }

  @AfterEach
  void close() {
    store.close();
    db.close();
  }

  @Test
  void aConnectionLostWhileDiagnosingAfterAnAutoCommittedGroupKeepsTheCommittedMembers()
      throws Exception {
    Lease done = leased();
    Lease stale = leased();
    List<LeaseBatches.Finish> finishes = List.of(finish(done.itemId(), done.token()),
        finish(stale.itemId(), stale.token() + 1)); // a token the store never handed out
    List<TetherStoreException> out = completeThenLoseTheConnection(finishes, true);
    assertThat(out.get(0)).as("the applied completion").isNull();
    assertThat(out.get(1)).isInstanceOf(LeaseExpiredException.class)
        .hasMessageContaining("cannot complete work item " + stale.itemId())
        .hasMessageContaining("reading why failed")
        .hasCauseInstanceOf(SQLException.class);
    assertThat(leases.find(done.itemId()).orElseThrow().status()).isEqualTo(WorkStatus.COMPLETED);
    assertThat(leases.find(stale.itemId()).orElseThrow().status()).isEqualTo(WorkStatus.IN_PROGRESS);
  }

  @Test
  void aGroupStatementIsCommittedOnItsOwn() {
    assertThat((boolean) store.writeOneStatement("probing", c -> store.storeEngine().committedAlone(c))).isTrue();
    assertThat((boolean) store.write("probing", c -> store.storeEngine().committedAlone(c))).isFalse();
  }

  @Test
  void aConnectionLostWhileDiagnosingInsideATransactionFailsTheWhole() throws Exception {
    Lease done = leased();
    Lease stale = leased();
    List<LeaseBatches.Finish> finishes = List.of(finish(done.itemId(), done.token()),
        finish(stale.itemId(), stale.token() + 1));
    assertThatThrownBy(() -> completeThenLoseTheConnection(finishes, false))
        .isInstanceOf(SQLException.class);
    // nothing was committed: the server rolled the transaction back with the connection
    assertThat(leases.find(done.itemId()).orElseThrow().status()).isEqualTo(WorkStatus.IN_PROGRESS);
  }

  @Test
  void aCompletionRepeatedInOneStatementIsFinalizedByItsLeaseEvenWithTheConnectionLost()
      throws Exception {
    Lease done = leased();
    List<LeaseBatches.Finish> finishes =
        List.of(finish(done.itemId(), done.token()), finish(done.itemId(), done.token()));
    List<TetherStoreException> out = completeThenLoseTheConnection(finishes, true);
    assertThat(out.get(0)).isNull();
    assertThat(out.get(1)).isInstanceOf(ItemFinalizedException.class); // as the read would say
  }

  @Test
  void anExtensionThatCommittedHoldsWhenWritingItsOutputFailsAfterIt() throws Exception {
    // PostgreSQL extends a batch of leases in one auto-committed statement and writes their
    // output in a second: a failure of the second (here a trigger refuses output) must not
    // report the committed extensions failed (the worker would think its lease not extended)
    Lease held = leased();
    try (Connection c = DriverManager.getConnection(db.url());
        java.sql.Statement st = c.createStatement()) {
      st.execute("CREATE FUNCTION refuse_output() RETURNS trigger LANGUAGE plpgsql AS"
          + " $$ BEGIN RAISE EXCEPTION 'output refused by test'; END $$");
      st.execute("CREATE TRIGGER refuse_output BEFORE UPDATE OF stdout_tail ON tether_work_items"
          + " FOR EACH ROW EXECUTE FUNCTION refuse_output()");
    }
    Instant before = held.expiresAt();
    Instant expiry = leases.renew(held.itemId(), held.token(), LEASE.multipliedBy(2),
        new dev.tether.mailbox.OutputTail("out", "", 3, Duration.ZERO, Duration.ZERO));
    assertThat(expiry).isAfter(before);
    WorkItem item = leases.find(held.itemId()).orElseThrow();
    assertThat(item.leaseExpiresAt()).isEqualTo(expiry);
    assertThat(item.stdoutTail()).isNull(); // the output was not written
  }

  /**
   * Runs {@code finishes} as one completion statement on a connection through a proxy, cuts the
   * connection, then diagnoses the refusals on it.
   */
  private List<TetherStoreException> completeThenLoseTheConnection(
      List<LeaseBatches.Finish> finishes, boolean autoCommit) throws SQLException {
    try (TcpProxy proxy = new TcpProxy(db.url());
        Connection c = DriverManager.getConnection(proxy.url(db.url()))) {
      c.setAutoCommit(autoCommit);
      Set<LeaseKey> applied =
          store.storeEngine().completeInOneStatement(c, finishes).orElseThrow();
      proxy.cut();
      return new LeaseDiagnosis(store.storeEngine()).outcomes(c, keys(finishes), applied, "complete");
    }
  }

  private Lease leased() {
    leases.enqueue(NewWorkItem.of("q", "job"));
    return leases.acquire("q", LEASE).orElseThrow();
  }

  private static LeaseBatches.Finish finish(long id, long token) {
    return new LeaseBatches.Finish(id, token, null, NOW); // one instant: one statement
  }

  private static List<LeaseKey> keys(List<LeaseBatches.Finish> finishes) {
    return finishes.stream().map(LeaseBatches.Finish::key).toList();
  }
}
