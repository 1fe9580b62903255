package dev.tether.jdbc;

import dev.tether.Codec;
import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.mailbox.Message;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

class PostgresThroughputTest extends ThroughputCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }

  @Override
  void failCompletionOf(Connection c, long id) throws Exception {
    execute(c, "CREATE FUNCTION fail_completion() RETURNS trigger LANGUAGE plpgsql AS"
        + " $$ BEGIN RAISE EXCEPTION 'completion refused by test trigger'; END $$");
    execute(c, "CREATE TRIGGER fail_completion BEFORE UPDATE ON tether_work_items FOR EACH ROW"
        + " WHEN (NEW.id = " + id + " AND NEW.status = 'completed') EXECUTE FUNCTION fail_completion()");
  }

  @Test
  void enqueueInAnotherStoreWakesAWaitingReceiverBeforeItsNextPoll() throws Exception {
    // The receiver polls only every 5 s; the item must start long before that: woken by NOTIFY.
    JdbcMailbox<String, String> in = JdbcMailbox.builder(store, "wake", Codec.utf8(), Codec.utf8())
        .pollInterval(Duration.ofSeconds(5)).build();
    in.receive(1, LEASE, Duration.ofMillis(50)); // starts the listener
    try (TetherStore other = db.open(TetherStoreConfig.builder().clock(clock).build())) {
      CompletableFuture<List<Message<String, String>>> got =
          CompletableFuture.supplyAsync(() -> in.receive(1, LEASE, Duration.ofSeconds(20)));
      Thread.sleep(300); // let the receiver block in its wait (not a timing assertion)
      new LeaseManager(other, "producer").enqueue(NewWorkItem.of("wake", "hello"));
      Awaitility.await().atMost(Duration.ofSeconds(4)).until(got::isDone);
      assertThat(got.get()).extracting(Message::body).containsExactly("hello");
    }
  }

  @Test
  void withNotificationsOffAWaitingReceiverStillFindsTheItemByPolling() throws Exception {
    TestDatabase shared = db;
    try (TetherStore quiet = shared.open(TetherStoreConfig.builder().notifications(false).build());
        TetherStore other = shared.open(TetherStoreConfig.builder().notifications(false).build())) {
      JdbcMailbox<String, String> in = JdbcMailbox.builder(quiet, "poll", Codec.utf8(), Codec.utf8())
          .pollInterval(Duration.ofMillis(50)).build();
      CompletableFuture<List<Message<String, String>>> got =
          CompletableFuture.supplyAsync(() -> in.receive(1, LEASE, Duration.ofSeconds(20)));
      new LeaseManager(other, "producer").enqueue(NewWorkItem.of("poll", "hello"));
      assertThat(got.get()).extracting(Message::body).containsExactly("hello");
    }
  }

  // ------------------------------------------------------------ fused group statement
  // On the database clock (no clock in the store's config), a group's completions and
  // acquisitions from one queue are one statement.

  @Test
  void aOneStatementGroupRefusesTheStaleCompletionAloneAndStillAcquires() {
    try (TetherStore dbClock = db.open(TetherStoreConfig.defaults())) {
      LeaseManager w = new LeaseManager(dbClock, "w");
      List<Long> ids = w.enqueueAll(List.of(NewWorkItem.of("q", "a"), NewWorkItem.of("q", "b"), NewWorkItem.of("q", "c")));
      List<Lease> held = w.acquire(AcquireRequest.batch("q", LEASE, 2));
      assertThat(held).extracting(Lease::itemId).containsExactly(ids.get(0), ids.get(1));
      GroupCommitter.Completion stale = new GroupCommitter.Completion(ids.get(0), held.get(0).token() ^ 1, null, null);
      GroupCommitter.Completion good = new GroupCommitter.Completion(ids.get(1), held.get(1).token(), null, null);
      GroupCommitter.Completion again = new GroupCommitter.Completion(ids.get(1), held.get(1).token(), null, null);
      GroupCommitter.Completion acquisition =
          GroupCommitter.Completion.acquisition(AcquireRequest.batch("q", LEASE, 5), "fused", null);

      dbClock.committer().submitAll(List.of(stale, good, again, acquisition));

      assertThat(stale.error).isInstanceOf(LeaseConflictException.class);
      assertThat(good.error).isNull();
      assertThat(again.error).as("the same lease twice in one group: the second is refused")
          .isInstanceOf(ItemFinalizedException.class);
      assertThat(acquisition.error).isNull();
      assertThat(acquisition.leases).extracting(Lease::itemId).containsExactly(ids.get(2));
      WorkItem a = w.find(ids.get(0)).orElseThrow();
      assertThat(a.status()).isEqualTo(WorkStatus.IN_PROGRESS);
      assertThat(a.leaseToken()).isEqualTo(held.get(0).token());
      WorkItem b = w.find(ids.get(1)).orElseThrow();
      assertThat(b.status()).isEqualTo(WorkStatus.COMPLETED);
      assertThat(b.completedAt()).isNotNull();
      assertThat(b.leaseExpiresAt()).isNull();
      WorkItem c = w.find(ids.get(2)).orElseThrow();
      assertThat(c.status()).isEqualTo(WorkStatus.IN_PROGRESS);
      assertThat(c.leaseHolder()).isEqualTo("fused");
      assertThat(c.leaseToken()).isEqualTo(acquisition.leases.get(0).token());
      assertThat(c.deliveryCount()).isEqualTo(1);
      assertThat(c.leaseExpiresAt()).isEqualTo(acquisition.leases.get(0).expiresAt());
      assertThat(acquisition.leases.get(0).expiresAt())
          .isEqualTo(acquisition.leases.get(0).acquiredAt().plus(LEASE));
    }
  }

  @Test
  void acquisitionsOfOneStatementGroupAreDealtInOrderWithTheirOwnHolderLeaseAndTokens() {
    try (TetherStore dbClock = db.open(TetherStoreConfig.defaults())) {
      LeaseManager w = new LeaseManager(dbClock, "w");
      List<Long> ids = w.enqueueAll(List.of(NewWorkItem.of("q", "a"), NewWorkItem.of("q", "b"),
          NewWorkItem.builder("q").input("urgent").priority(5).build(), NewWorkItem.of("q", "d")));
      Duration shorter = Duration.ofSeconds(10);
      GroupCommitter.Completion first =
          GroupCommitter.Completion.acquisition(AcquireRequest.batch("q", LEASE, 2), "one", null);
      GroupCommitter.Completion second =
          GroupCommitter.Completion.acquisition(AcquireRequest.batch("q", shorter, 3), "two", null);

      dbClock.committer().submitAll(List.of(first, second));

      assertThat(first.error).isNull();
      assertThat(second.error).isNull();
      // highest priority first, then oldest; the first acquisition gets the first picked rows
      assertThat(first.leases).extracting(Lease::itemId).containsExactly(ids.get(2), ids.get(0));
      assertThat(second.leases).extracting(Lease::itemId).containsExactly(ids.get(1), ids.get(3));
      Set<Long> tokens = new HashSet<>();
      for (GroupCommitter.Completion acq : List.of(first, second)) {
        Duration lease = acq == first ? LEASE : shorter;
        for (Lease l : acq.leases) {
          tokens.add(l.token());
          WorkItem item = w.find(l.itemId()).orElseThrow();
          assertThat(item.leaseHolder()).isEqualTo(acq.holder);
          assertThat(item.leaseToken()).isEqualTo(l.token());
          assertThat(item.leaseExpiresAt()).isEqualTo(l.acquiredAt().plus(lease));
          assertThat(l.holder()).isEqualTo(acq.holder);
        }
      }
      assertThat(tokens).hasSize(4);
    }
  }

  @Test
  void aOneStatementGroupFindingExpiredLeasesStillCompletesAndRedeliversThemThroughTheFullAcquisition() {
    try (TetherStore dbClock = db.open(TetherStoreConfig.defaults())) {
      LeaseManager w = new LeaseManager(dbClock, "w");
      List<Long> ids = w.enqueueAll(List.of(NewWorkItem.of("q", "a"), NewWorkItem.of("q", "b")));
      Lease kept = w.acquire(AcquireRequest.one("q", LEASE)).get(0);
      Lease lapsing = w.acquire(AcquireRequest.one("q", Duration.ofMillis(1))).get(0);
      assertThat(List.of(kept.itemId(), lapsing.itemId())).containsExactly(ids.get(0), ids.get(1));
      // the database clock decides: wait until it is past the short lease
      org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() ->
          dbClock.read("clock", c -> dbClock.now(c, null)).isAfter(lapsing.expiresAt()));
      GroupCommitter.Completion done = new GroupCommitter.Completion(kept.itemId(), kept.token(), null, null);
      GroupCommitter.Completion acquisition =
          GroupCommitter.Completion.acquisition(AcquireRequest.batch("q", LEASE, 5), "taker", null);

      dbClock.committer().submitAll(List.of(done, acquisition));

      assertThat(done.error).isNull();
      assertThat(w.find(kept.itemId()).orElseThrow().status()).isEqualTo(WorkStatus.COMPLETED);
      assertThat(acquisition.error).isNull();
      assertThat(acquisition.leases).extracting(Lease::itemId).containsExactly(lapsing.itemId());
      WorkItem redelivered = w.find(lapsing.itemId()).orElseThrow();
      assertThat(redelivered.leaseHolder()).isEqualTo("taker");
      assertThat(redelivered.deliveryCount()).isEqualTo(2);
      assertThat(redelivered.checkpoints()).extracting(Checkpoint::kind).containsExactly(Checkpoint.LEASE_EXPIRED);
      assertThat(redelivered.checkpoints().get(0).leaseToken()).isEqualTo(lapsing.token());
      // the old token is refused
      GroupCommitter.Completion late = new GroupCommitter.Completion(lapsing.itemId(), lapsing.token(), null, null);
      dbClock.committer().submitAll(List.of(late));
      assertThat(late.error).isInstanceOf(LeaseConflictException.class);
    }
  }

  @Test
  void aOneStatementGroupThatFailsTakesNothingAndCompletesNothing() throws Exception {
    try (TetherStore dbClock = db.open(TetherStoreConfig.defaults())) {
      assertAFailingGroupTakesNothingAndCompletesNothing(dbClock, null);
    }
  }

  @Test
  void onTheDatabaseClockConcurrentReceivesAndAcknowledgementsDrainEveryMessageExactlyOnce() throws Exception {
    try (TetherStore dbClock = db.open(TetherStoreConfig.builder().maximumPoolSize(6).build())) {
      JdbcMailbox<String, String> box = JdbcMailbox.ofStrings(dbClock, "q");
      int n = 300;
      enqueueNumbered(dbClock, "q", n);
      assertThat(drainConcurrently(box, 6)).hasSize(n).doesNotHaveDuplicates();
      // the receives went through the group committer, as one statement with its completions
      assertThat(dbClock.committer().fusedStatements()).isPositive();
      try (Connection c = dbClock.dataSource().getConnection();
          java.sql.Statement st = c.createStatement();
          java.sql.ResultSet rs = st.executeQuery("SELECT status, count(*), max(delivery_count) FROM tether_work_items"
              + " WHERE queue = 'q' GROUP BY status")) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getString(1)).isEqualTo("completed");
        assertThat(rs.getInt(2)).isEqualTo(n);
        assertThat(rs.getInt(3)).isEqualTo(1);
        assertThat(rs.next()).isFalse();
      }
    }
  }

  /** 20 leases held on a queue of 200 items (small partial indexes of leases, as in a fresh queue). */
  private List<Lease> leasesAmongMany() {
    LeaseManager w = new LeaseManager(store, "w");
    List<NewWorkItem> items = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      items.add(NewWorkItem.of("q", "x" + i));
    }
    w.enqueueAll(items);
    return w.acquire(AcquireRequest.batch("q", LEASE, 20));
  }

  /** Runs an {@code EXPLAIN} statement and returns its plan text. */
  static String explain(java.sql.PreparedStatement ps) throws Exception {
    StringBuilder plan = new StringBuilder();
    try (java.sql.ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        plan.append(rs.getString(1)).append('\n');
      }
    }
    return plan.toString();
  }

  /** The plan PostgreSQL makes for the one-statement acquisition of 10 items from {@code queue}. */
  static String planOfAcquireFast(Connection c, String queue) throws Exception {
    try (java.sql.PreparedStatement ps = c.prepareStatement("EXPLAIN " + PostgresAcquisitions.acquireSql(10))) {
      ps.setObject(1, null, java.sql.Types.TIMESTAMP_WITH_TIMEZONE);
      ps.setString(2, queue);
      ps.setString(3, queue);
      ps.setString(4, queue);
      ps.setString(5, "h");
      ps.setLong(6, 30_000);
      ps.setArray(7, c.createArrayOf("bigint", new Long[] {1L, 2L}));
      return explain(ps);
    }
  }

  /** The plan PostgreSQL makes for {@code sql} with these array parameters (ids, tokens, ids, then more). */
  private static String planOf(Connection c, String sql, Long[] ids, Object... more) throws Exception {
    try (java.sql.PreparedStatement ps = c.prepareStatement("EXPLAIN " + sql)) {
      java.sql.Array idArray = c.createArrayOf("bigint", ids);
      int i = 1;
      if (sql.startsWith("UPDATE")) {
        ps.setObject(i++, null, java.sql.Types.TIMESTAMP_WITH_TIMEZONE);
        ps.setObject(i++, null, java.sql.Types.TIMESTAMP_WITH_TIMEZONE);
      } else if (sql.startsWith("WITH t AS")) { // the group statement's instant
        ps.setObject(i++, null, java.sql.Types.TIMESTAMP_WITH_TIMEZONE);
      }
      ps.setArray(i++, idArray);
      ps.setArray(i++, c.createArrayOf("bigint", ids));
      ps.setArray(i++, idArray);
      for (Object o : more) {
        ps.setObject(i++, o);
      }
      return explain(ps);
    }
  }

  @Test
  void groupCompletionsProbeThePrimaryKeyInsteadOfScanningThePartialIndexesOfLeases() throws Exception {
    // Small partial indexes of leases (what a fresh queue has) made the planner scan a whole one
    // and hash-join it, then keep that plan as the index filled with dead entries.
    List<Lease> held = leasesAmongMany();
    Long[] ids = held.stream().limit(7).map(Lease::itemId).toArray(Long[]::new);
    try (Connection c = store.dataSource().getConnection()) {
      String completions = planOf(c, PostgresLeaseBatches.COMPLETE_ALL, ids);
      assertThat(completions).contains("tether_work_items_pkey").doesNotContain("tether_work_items_leased")
          .doesNotContain("Seq Scan on tether_work_items");
      String fused = planOf(c, PostgresAcquisitions.groupSql(10), ids, "q", "q", "q",
          c.createArrayOf("bigint", new Long[] {1L}), c.createArrayOf("text", new String[] {"h"}),
          c.createArrayOf("bigint", new Long[] {1000L}));
      String done = fused.substring(fused.indexOf("CTE done"), fused.indexOf("CTE x"));
      assertThat(done).contains("tether_work_items_pkey").doesNotContain("tether_work_items_leased")
          .doesNotContain("Seq Scan on tether_work_items");
    }
  }

  @Test
  void withTheStatisticsOfABusyQueueTheOneStatementChecksStayIndexProbes() throws Exception {
    // Found with ANALYZE on a queue a fifth of whose rows were leased: EXISTS over the expired
    // leases, at an instant the planner cannot see (a subquery), was costed as stopping at the
    // first of a third of them, and PostgreSQL chose to scan the whole table for one that was not
    // there (10 ms a statement at 100,000 rows, against 0.8 ms). The test server runs without
    // autovacuum, so no other test has statistics; a production server has them.
    try (Connection c = store.dataSource().getConnection()) {
      Long[] ids = busyQueueWithStatistics(c);
      String fused = planOf(c, PostgresAcquisitions.groupSql(10), ids, "q", "q", "q",
          c.createArrayOf("bigint", new Long[] {1L}), c.createArrayOf("text", new String[] {"h"}),
          c.createArrayOf("bigint", new Long[] {1000L}));
      assertThat(fused).doesNotContain("Seq Scan on tether_work_items");
      String check = fused.substring(fused.indexOf("CTE x"), fused.indexOf("CTE pick"));
      assertThat(check).contains("Index Only Scan using tether_work_items_scheduled")
          .containsPattern("Index (Only )?Scan using tether_work_items_leased_by_queue");
      assertThat(planOfAcquireFast(c, "q")).doesNotContain("Seq Scan on tether_work_items");
    }
  }

  @Test
  void withTheStatisticsOfABusyQueueEveryHotStatementKeepsAnIndexPlanCustomAndGeneric() throws Exception {
    // PostgreSQL plans a prepared statement for its parameters five times, then may keep a
    // generic plan that knows none of them: both must stay index plans.
    String now = "now()";
    String ids = "'{1,2,3}'::bigint[]";
    Map<String, List<String>> statements = new LinkedHashMap<>();
    statements.put(PostgresAcquisitions.acquireSql(10),
        List.of("NULL", "'q'", "'q'", "'q'", "'h'", "30000", ids));
    statements.put(PostgresAcquisitions.groupSql(10),
        List.of("NULL", ids, ids, ids, "'q'", "'q'", "'q'", ids, "'{h,h,h}'::text[]", ids));
    statements.put(PostgresLeaseBatches.COMPLETE_ALL, List.of("NULL", "NULL", ids, ids, ids));
    statements.put(PostgresLeaseBatches.RENEW_ALL, List.of(ids, ids, ids, ids, ids));
    for (boolean pending : new boolean[] {true, false}) {
      statements.put(Acquisitions.candidatesSql(store.storeEngine(), pending, false, false),
          List.of("'q'", now, "10"));
    }
    // the sweep's, and the full acquisition's search for leases expired on their last delivery
    statements.put(ExpiredLeases.findExpiredSql(false, false), List.of(now, "500"));
    statements.put(ExpiredLeases.findExpiredSql(true, true),
        List.of("'q'", now, "500"));
    statements.put(PostgresEngine.PROMOTE, List.of("'q'", now));
    // (Not the pending count: it reads every pending item whatever the plan, and with 13% of
    // this table pending a sequential scan is the planner's fair choice.)
    try (Connection c = store.dataSource().getConnection()) {
      busyQueueWithStatistics(c);
      for (Map.Entry<String, List<String>> e : statements.entrySet()) {
        for (boolean generic : new boolean[] {false, true}) {
          assertThat(plan(c, e.getKey(), e.getValue(), generic))
              .as("%s plan of %s", generic ? "generic" : "custom", e.getKey())
              .doesNotContain("Seq Scan on tether_work_items");
        }
      }
    }
  }

  /**
   * Fills queue q as a drain leaves it before a vacuum (30,000 items: 20,000 done, 6,000 leased
   * by another holder, 10 leased here, the rest pending) and runs ANALYZE; returns 8 ids leased
   * here.
   */
  private Long[] busyQueueWithStatistics(Connection c) throws Exception {
    LeaseManager w = new LeaseManager(store, "w");
    List<NewWorkItem> items = new ArrayList<>();
    for (int i = 0; i < 30_000; i++) {
      items.add(NewWorkItem.of("q", "x" + i));
    }
    w.enqueueAll(items);
    List<Lease> held = w.acquire(AcquireRequest.batch("q", Duration.ofMinutes(5), 10));
    // The rest of the history in bulk: 26,000 items leased in no particular order of expiry,
    // 20,000 of them done since (their old versions still in the indexes of leases).
    execute(c, "UPDATE tether_work_items SET status = 'in_progress', lease_holder = 'other', lease_token = id,"
        + " lease_expires_at = now() + interval '5 minutes' * (1 + random()), delivery_count = 1 WHERE id IN"
        + " (SELECT id FROM tether_work_items WHERE status = 'pending' ORDER BY id LIMIT 26000)");
    execute(c, "UPDATE tether_work_items SET status = 'completed', lease_expires_at = NULL, completed_at = now()"
        + " WHERE id IN (SELECT id FROM tether_work_items WHERE lease_holder = 'other' ORDER BY id LIMIT 20000)");
    execute(c, "ANALYZE tether_work_items");
    return held.stream().limit(8).map(Lease::itemId).toArray(Long[]::new);
  }

  /**
   * The plan of {@code sql} (its {@code ?} parameters numbered) for these SQL literals, custom
   * (planned for them) or generic (as PostgreSQL may cache it: planned for no values).
   */
  private static String plan(Connection c, String sql, List<String> args, boolean generic) throws Exception {
    StringBuilder numbered = new StringBuilder();
    int n = 0;
    for (char ch : sql.toCharArray()) {
      if (ch == '?') {
        numbered.append('$').append(++n);
      } else {
        numbered.append(ch);
      }
    }
    assertThat(args).as("arguments of %s", sql).hasSize(n);
    try (java.sql.Statement st = c.createStatement()) {
      boolean prepared = false;
      try {
        st.execute("SET plan_cache_mode = " + (generic ? "force_generic_plan" : "force_custom_plan"));
        st.execute("PREPARE tether_plan AS " + numbered);
        prepared = true;
        try (java.sql.ResultSet rs = st.executeQuery("EXPLAIN EXECUTE tether_plan(" + String.join(", ", args) + ")")) {
          StringBuilder plan = new StringBuilder();
          while (rs.next()) {
            plan.append(rs.getString(1)).append('\n');
          }
          return plan.toString();
        }
      } finally {
        if (prepared) {
          st.execute("DEALLOCATE tether_plan");
        }
        st.execute("RESET plan_cache_mode");
      }
    }
  }

  @Test
  void groupRenewalsProbeThePrimaryKeyInsteadOfScanningThePartialIndexOfLeases() throws Exception {
    // As for completions: status = 'in_progress' let the planner answer the status test with the
    // partial index of leases (every queue's, dead entries included) instead of the primary key.
    List<Lease> held = leasesAmongMany();
    Long[] ids = held.stream().limit(7).map(Lease::itemId).toArray(Long[]::new);
    Long[] tokens = held.stream().limit(7).map(Lease::token).toArray(Long[]::new);
    Long[] extend = new Long[ids.length];
    java.util.Arrays.fill(extend, 30_000L);
    try (Connection c = store.dataSource().getConnection();
        java.sql.PreparedStatement ps = c.prepareStatement("EXPLAIN " + PostgresLeaseBatches.RENEW_ALL)) {
      ps.setArray(1, c.createArrayOf("bigint", ids));
      ps.setArray(2, c.createArrayOf("bigint", tokens));
      ps.setArray(3, c.createArrayOf("bigint", extend));
      ps.setArray(4, c.createArrayOf("bigint", new Long[ids.length]));
      ps.setArray(5, c.createArrayOf("bigint", ids));
      assertThat(explain(ps)).contains("tether_work_items_pkey").doesNotContain("tether_work_items_leased")
          .doesNotContain("Seq Scan on tether_work_items");
    }
  }

  @Test
  void onALargeQueueTheOneStatementAcquisitionsRunOnAGenericPlanInsteadOfBeingPlannedEveryTime() throws Exception {
    // With the pick's LIMIT as a parameter the generic plan assumed a tenth of the queue: from
    // about 20,000 items PostgreSQL judged it dearer than the custom plans and planned the fused
    // statement at every execution (a quarter of the backend's CPU in a drain).
    LeaseManager w = new LeaseManager(store, "w");
    List<NewWorkItem> items = new ArrayList<>();
    for (int i = 0; i < 30_000; i++) {
      items.add(NewWorkItem.of("q", "x"));
    }
    w.enqueueAll(items);
    PostgresAcquisitions acquisitions = ((PostgresEngine) store.storeEngine()).acquisitions();
    try (Connection c = store.dataSource().getConnection()) {
      c.setAutoCommit(true);
      try (java.sql.Statement st = c.createStatement()) {
        st.execute("ANALYZE tether_work_items");
      }
      List<Lease> held = new ArrayList<>();
      for (int i = 0; i < 12; i++) {
        held.addAll(acquisitions.acquire(c, AcquireRequest.batch("q", LEASE, 10), "h", null).orElseThrow());
      }
      for (int i = 0; i < 12; i++) {
        List<LeaseKey> finishes = new ArrayList<>();
        for (Lease l : held.subList(i * 8, i * 8 + 8)) {
          finishes.add(new LeaseKey(l.itemId(), l.token()));
        }
        PostgresAcquisitions.Fused out = acquisitions.completeAndAcquire(
            c, finishes, "q", List.of(new PostgresAcquisitions.Take("h", LEASE, 10)), null);
        assertThat(out.refusals()).containsOnlyNulls();
        assertThat(out.leases().get(0)).hasSize(10);
      }
      try (java.sql.Statement st = c.createStatement();
          java.sql.ResultSet rs = st.executeQuery("SELECT generic_plans, custom_plans, left(statement, 80)"
              + " FROM pg_prepared_statements WHERE statement LIKE '%pick AS%'")) {
        int statements = 0;
        while (rs.next()) {
          statements++;
          assertThat(rs.getLong(1)).as("generic plans of %s", rs.getString(3)).isPositive();
          assertThat(rs.getLong(2)).as("custom plans of %s", rs.getString(3)).isLessThanOrEqualTo(5);
        }
        assertThat(statements).as("both statements prepared on the server").isEqualTo(2);
      }
    }
  }
}

