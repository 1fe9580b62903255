package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The PostgreSQL store's group committer allows two groups in flight, but starts the second only
 * when it would have at least {@link GroupCommitter#MIN_PARALLEL_GROUP} members: a lone
 * completion arriving while a group commits waits for the next group; enough of them commit
 * beside the one in flight. A group is held in flight here by a row lock the test takes.
 */
class PostgresParallelGroupsTest {
  private static final Duration LEASE = Duration.ofMinutes(5);

  private PostgresTestSchema schema;
  private TetherStore store;
  private LeaseManager leases;
  private Connection locker;

  @BeforeEach
  void setUp() throws Exception {
    schema = new PostgresTestSchema("tether_groups_");
    store = TetherStore.open(schema.url(), TetherStoreConfig.builder().maximumPoolSize(4).build());
    leases = new LeaseManager(store, "w");
    locker = DriverManager.getConnection(schema.url());
    locker.setAutoCommit(false);
  }

  @AfterEach
  void tearDown() throws Exception {
    locker.close();
    store.close();
    schema.close();
  }

  /** Leases of {@code n} new items. */
  private List<Lease> held(int n) {
    List<NewWorkItem> items = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      items.add(NewWorkItem.of("q", "i" + i));
    }
    leases.enqueueAll(items);
    List<Lease> got = leases.acquire(AcquireRequest.batch("q", LEASE, n));
    assertThat(got).hasSize(n);
    return got;
  }

  private CompletableFuture<Void> completeAsync(Lease l) {
    return CompletableFuture.runAsync(() -> leases.complete(l.itemId(), l.token(), null));
  }

  /** The locker's backend, which the group in flight waits for. */
  private int lockerPid() throws Exception {
    try (Statement st = locker.createStatement(); var rs = st.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /**
   * Whether a statement waits for the locker's row lock (read outside the locker's transaction;
   * only sessions the locker blocks: other test classes share the database).
   */
  private boolean blockedBy(int lockerPid) throws Exception {
    try (Connection c = DriverManager.getConnection(schema.url());
        var ps = c.prepareStatement("SELECT count(*) FROM pg_stat_activity"
            + " WHERE ?::int = ANY(pg_blocking_pids(pid))")) {
      ps.setInt(1, lockerPid);
      try (var rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1) > 0;
      }
    }
  }

  @Test
  void aLoneCompletionWaitsForTheGroupInFlightAndEnoughCommitBesideIt() throws Exception {
    List<Lease> l = held(6);
    try (Statement st = locker.createStatement()) {
      st.execute("SELECT id FROM tether_work_items WHERE id = " + l.get(0).itemId() + " FOR UPDATE");
    }
    int lockerPid = lockerPid();
    CompletableFuture<Void> inFlight = completeAsync(l.get(0)); // leads a group that waits for the lock
    await().atMost(Duration.ofSeconds(30)).until(() -> blockedBy(lockerPid));

    CompletableFuture<Void> lone = completeAsync(l.get(1));
    // not a timing assertion: with a second group allowed for it alone, it would commit at once
    await("a lone completion waits for the group in flight").during(Duration.ofMillis(500))
        .atMost(Duration.ofSeconds(5)).until(() -> !lone.isDone());

    // four more queue: with the lone one, a group worth running beside the one in flight
    List<LeaseKey> four = new ArrayList<>();
    for (Lease x : l.subList(2, 6)) {
      four.add(new LeaseKey(x.itemId(), x.token()));
    }
    CompletableFuture<List<RuntimeException>> more = CompletableFuture.supplyAsync(() -> leases.completeAll(four));
    await("five queued completions commit beside the group in flight").atMost(Duration.ofSeconds(30))
        .until(() -> more.isDone() && lone.isDone());
    assertThat(more.get()).containsOnlyNulls();
    lone.get();
    assertThat(inFlight).isNotDone();

    locker.rollback(); // the first group goes on
    inFlight.get();
    for (Lease x : l) {
      assertThat(leases.find(x.itemId()).orElseThrow().status()).isEqualTo(WorkStatus.COMPLETED);
    }
  }
}
