package dev.tether.bench.jdbc;

import dev.tether.jdbc.AcquireRequest;
import dev.tether.jdbc.JdbcMailbox;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.micrometer.TetherMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import dev.tether.jdbc.Lease;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.RecoverySweep;
import dev.tether.jdbc.RecoverySweepConfig;
import dev.tether.jdbc.RecoveryStats;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Whole-queue figures for the JDBC store (measured, never asserted): drain rate of a pre-filled
 * queue of no-op items, acquire+complete latency, and the time of one recovery sweep over 10,000
 * expired leases among 1,000,000 rows, with the query plans of the acquire and sweep queries on
 * that table.
 *
 * <p>Run: {@code java -cp tether-bench/target/benchmarks.jar dev.tether.bench.jdbc.DrainBenchmark
 * [sqlite|postgres|both] [items] [threads]}. PostgreSQL from {@code TETHER_TEST_PG_URL}
 * (default {@code jdbc:postgresql://127.0.0.1:5432/test?user=postgres}); each run uses a fresh
 * schema, dropped at the end. SQLite uses a temp file in WAL mode.
 *
 * <p>{@code DrainBenchmark metrics [items] [threads] [rounds]} (defaults 5000, 4, 3): the cost of
 * {@code tether-micrometer} on PostgreSQL's per-message drain: {@code threads} {@code MainLoop}s
 * (one message per receive, each acknowledged) drain a pre-filled queue, alternating runs without
 * a listener and with {@code TetherMetrics}' loop and extender listeners bound to a registry and
 * the loops' heartbeat age exported; each run on a fresh schema.
 */
public final class DrainBenchmark {
  private DrainBenchmark() {}

  public static void main(String[] args) throws Exception {
    String which = args.length > 0 ? args[0] : "both";
    if (which.equals("metrics")) {
      metricsCost(args.length > 1 ? Integer.parseInt(args[1]) : 5000,
          args.length > 2 ? Integer.parseInt(args[2]) : 4,
          args.length > 3 ? Integer.parseInt(args[3]) : 3);
      return;
    }
    int items = args.length > 1 ? Integer.parseInt(args[1]) : 20_000;
    int threads = args.length > 2 ? Integer.parseInt(args[2]) : 4;
    if (which.equals("sqlite") || which.equals("both")) {
      Path dir = Files.createTempDirectory("tether-bench");
      run("SQLite (WAL, synchronous=NORMAL)", dir.resolve("bench.db").toString(), false, items, threads,
          TetherStoreConfig.defaults());
      run("SQLite (WAL, synchronous=FULL)", dir.resolve("bench-full.db").toString(), false, items, threads,
          TetherStoreConfig.builder().sqliteSynchronous(TetherStoreConfig.SqliteSynchronous.FULL).build());
    }
    if (which.equals("postgres") || which.equals("both")) {
      try (BenchSchema schema = BenchSchema.create("tether_bench_")) {
        run("PostgreSQL (synchronous_commit=on)", schema.url(), true, items, threads, TetherStoreConfig.defaults());
      }
    }
  }

  /** {@code pg}: the URL is the PostgreSQL schema (the harness loads and explains with PostgreSQL's SQL). */
  private static void run(String label, String url, boolean pg, int items, int threads, TetherStoreConfig config)
      throws Exception {
    System.out.println("=== " + label + " ===");
    try (TetherStore store = TetherStore.open(url, config)) {
      LeaseManager producer = new LeaseManager(store, "producer");
      for (int batch : new int[] {1, 10}) {
        String queue = "drain-" + batch;
        prefill(producer, queue, items);
        long start = System.nanoTime();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Integer>> done = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          LeaseManager w = new LeaseManager(store, "worker-" + t);
          done.add(pool.submit(() -> {
            int n = 0;
            while (true) {
              List<Lease> leases = w.acquire(AcquireRequest.batch(queue, Duration.ofMinutes(5), batch));
              if (leases.isEmpty()) {
                return n;
              }
              for (Lease l : leases) {
                w.complete(l.itemId(), l.token(), null);
                n++;
              }
            }
          }));
        }
        int total = 0;
        for (Future<Integer> f : done) {
          total += f.get();
        }
        pool.shutdown();
        double secs = (System.nanoTime() - start) / 1e9;
        System.out.printf(Locale.ROOT, "drain: %d no-op items, %d threads, acquire batch %d: %.2f s, %.0f items/s%n",
            total, threads, batch, secs, total / secs);
      }
      // latency of acquire(1) + complete, one thread
      String queue = "latency";
      int n = 2000;
      prefill(producer, queue, n);
      LeaseManager w = new LeaseManager(store, "latency-worker");
      long[] micros = new long[n];
      for (int i = 0; i < n; i++) {
        long t0 = System.nanoTime();
        Lease l = w.acquire(queue, Duration.ofMinutes(5)).orElseThrow();
        w.complete(l.itemId(), l.token(), null);
        micros[i] = (System.nanoTime() - t0) / 1000;
      }
      Arrays.sort(micros);
      System.out.printf(Locale.ROOT, "acquire+complete latency (1 thread, %d ops): p50 %d us, p90 %d us, p99 %d us, max %d us%n",
          n, micros[n / 2], micros[n * 9 / 10], micros[n * 99 / 100], micros[n - 1]);
      sweepFigure(store, pg);
    }
  }

  /** Alternating per-message drains on PostgreSQL without and with the metrics binder. */
  private static void metricsCost(int items, int threads, int rounds) throws Exception {
    System.out.println("=== PostgreSQL per-message drain (MainLoop, 1 message per receive), "
        + items + " items, " + threads + " loops: without / with TetherMetrics ===");
    double[][] rates = new double[2][rounds];
    for (int r = -1; r < rounds; r++) { // round -1: warm-up, not reported
      for (int with = 0; with < 2; with++) {
        try (BenchSchema schema = BenchSchema.create("tether_bench_")) {
          double rate = loopDrain(schema.url(), items, threads, with == 1);
          if (r >= 0) {
            rates[with][r] = rate;
            System.out.printf(Locale.ROOT, "round %d %-8s %.0f items/s%n", r + 1,
                with == 1 ? "metrics" : "bare", rate);
          }
        }
      }
    }
    double bare = median(rates[0]);
    double metered = median(rates[1]);
    System.out.printf(Locale.ROOT, "median: bare %.0f items/s, with metrics %.0f items/s, ratio %.3f%n",
        bare, metered, metered / bare);
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }

  private static double loopDrain(String url, int items, int threads, boolean metrics) throws Exception {
    try (TetherStore store = TetherStore.open(url)) {
      prefill(new LeaseManager(store, "producer"), "drain", items);
      TetherMetrics meters = TetherMetrics.builder().queues("drain").build();
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      if (metrics) {
        meters.bindTo(registry);
      }
      java.util.concurrent.atomic.AtomicInteger done = new java.util.concurrent.atomic.AtomicInteger();
      List<MainLoop<String, String>> loops = new ArrayList<>();
      MainLoop.Listener counting = new MainLoop.Listener() {
        @Override
        public void completed(dev.tether.mailbox.Message<?, ?> message, Duration took) {
          if (done.incrementAndGet() == items) {
            loops.forEach(MainLoop::shutdown);
          }
        }
      };
      for (int t = 0; t < threads; t++) {
        MainLoop.Builder<String, String> b = MainLoop.builder("drain-" + t,
                JdbcMailbox.ofStrings(store, "drain"), (String body, dev.tether.loop.WorkContext c) -> body)
            .config(MainLoopConfig.builder().maxMessages(1).waitTime(Duration.ofMillis(100)).build());
        if (metrics) {
          b.listener(MainLoop.Listener.all(counting, meters.loopListener("drain")))
              .extenderListener(meters.extenderListener("drain"));
        } else {
          b.listener(counting);
        }
        loops.add(b.build());
      }
      if (metrics) {
        meters.watchAll(loops);
      }
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      long start = System.nanoTime();
      List<Future<?>> running = new ArrayList<>();
      for (MainLoop<String, String> l : loops) {
        running.add(pool.submit((Runnable) () -> l.run()));
      }
      for (Future<?> f : running) {
        f.get();
      }
      double secs = (System.nanoTime() - start) / 1e9;
      pool.shutdown();
      if (done.get() != items) {
        throw new IllegalStateException("drained " + done.get() + " of " + items);
      }
      if (metrics && registry.get(TetherMetrics.HANDLER_DURATION).timer().count() != items) {
        throw new IllegalStateException("the metrics missed completions");
      }
      return items / secs;
    }
  }

  /** Enqueues {@code items} no-op items in batches of 1,000 (shared with {@link PeerComparison}). */
  static void prefill(LeaseManager producer, String queue, int items) {
    for (int i = 0; i < items; i += 1000) {
      List<NewWorkItem> chunk = new ArrayList<>();
      for (int j = i; j < Math.min(items, i + 1000); j++) {
        chunk.add(NewWorkItem.of(queue, "noop"));
      }
      producer.enqueueAll(chunk);
    }
  }

  /** Loads 1,000,000 rows (10,000 of them expired leases) and times one sweep over them. */
  private static void sweepFigure(TetherStore store, boolean pg) throws Exception {
    long loadStart = System.nanoTime();
    try (Connection c = store.dataSource().getConnection(); Statement st = c.createStatement()) {
      st.execute("DELETE FROM tether_work_item_checkpoints");
      st.execute("DELETE FROM tether_work_items");
      if (pg) {
        st.execute("INSERT INTO tether_work_items (queue, status, priority, delivery_count, max_attempts, available_at,"
            + " created_at, updated_at, completed_at, lease_holder, lease_token)"
            + " SELECT 'q' || (i % 10), 'completed', 0, 1, 3, now() - interval '2 days', now() - interval '2 days',"
            + " now() - interval '1 day', now() - interval '1 day', 'old', i FROM generate_series(1, 970000) i");
        st.execute("INSERT INTO tether_work_items (queue, status, priority, delivery_count, max_attempts, available_at,"
            + " created_at, updated_at) SELECT 'q' || (i % 10), 'pending', i % 3, 0, 3, now(), now(), now()"
            + " FROM generate_series(1, 20000) i");
        st.execute("INSERT INTO tether_work_items (queue, status, priority, delivery_count, max_attempts, available_at,"
            + " created_at, updated_at, lease_holder, lease_token, lease_acquired_at, lease_expires_at, heartbeat_at)"
            + " SELECT 'q' || (i % 10), 'in_progress', 0, 1, 3, now() - interval '1 hour', now() - interval '1 hour',"
            + " now() - interval '1 hour', 'dead-worker', i, now() - interval '1 hour', now() - interval '10 minutes',"
            + " now() - interval '20 minutes' FROM generate_series(1, 10000) i");
        st.execute("ANALYZE tether_work_items");
      } else {
        long now = System.currentTimeMillis();
        st.execute("WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 970000)"
            + " INSERT INTO tether_work_items (queue, status, priority, delivery_count, max_attempts, available_at,"
            + " created_at, updated_at, completed_at, lease_holder, lease_token) SELECT 'q' || (i % 10), 'completed',"
            + " 0, 1, 3, " + (now - 172800000L) + ", " + (now - 172800000L) + ", " + (now - 86400000L) + ", "
            + (now - 86400000L) + ", 'old', i FROM s");
        st.execute("WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 20000)"
            + " INSERT INTO tether_work_items (queue, status, priority, delivery_count, max_attempts, available_at,"
            + " created_at, updated_at) SELECT 'q' || (i % 10), 'pending', i % 3, 0, 3, " + now + ", " + now + ", "
            + now + " FROM s");
        st.execute("WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 10000)"
            + " INSERT INTO tether_work_items (queue, status, priority, delivery_count, max_attempts, available_at,"
            + " created_at, updated_at, lease_holder, lease_token, lease_acquired_at, lease_expires_at, heartbeat_at)"
            + " SELECT 'q' || (i % 10), 'in_progress', 0, 1, 3, " + (now - 3600000L) + ", " + (now - 3600000L) + ", "
            + (now - 3600000L) + ", 'dead-worker', i, " + (now - 3600000L) + ", " + (now - 600000L) + ", "
            + (now - 1200000L) + " FROM s");
        st.execute("ANALYZE");
      }
      System.out.printf(Locale.ROOT, "loaded 1,000,000 rows (970,000 completed, 20,000 pending, 10,000 expired leases) in %.1f s%n",
          (System.nanoTime() - loadStart) / 1e9);
      String nowLit = pg ? "now()" : Long.toString(System.currentTimeMillis());
      // the acquisition's own predicate (Acquisitions): without scheduled = FALSE the partial
      // index tether_work_items_pending does not apply and the plan shown is not the store's
      String acquire = "SELECT id FROM tether_work_items WHERE queue = 'q3' AND status = 'pending' AND scheduled = FALSE AND available_at <= "
          + nowLit + " ORDER BY priority DESC, id LIMIT 10" + (pg ? " FOR UPDATE SKIP LOCKED" : "");
      String expired = "SELECT id FROM tether_work_items WHERE status = 'in_progress' AND lease_expires_at <= " + nowLit
          + " ORDER BY lease_expires_at LIMIT 500";
      String expiredQueue = "SELECT id FROM tether_work_items WHERE queue = 'q3' AND status = 'in_progress' AND lease_expires_at <= "
          + nowLit + " AND delivery_count >= max_attempts ORDER BY lease_expires_at LIMIT 500";
      for (String q : List.of(acquire, expired, expiredQueue)) {
        System.out.println("plan of: " + q);
        try (ResultSet rs = st.executeQuery((pg ? "EXPLAIN (ANALYZE, BUFFERS) " : "EXPLAIN QUERY PLAN ") + q)) {
          int cols = rs.getMetaData().getColumnCount();
          while (rs.next()) {
            System.out.println("    " + rs.getString(cols));
          }
        }
      }
    }
    RecoverySweep sweep = new RecoverySweep(store, RecoverySweepConfig.builder().cleanupEnabled(false).build());
    RecoveryStats stats = sweep.scanAndRecover();
    System.out.printf(Locale.ROOT, "sweep of 10,000 expired among 1,000,000: %d ms (expired %d, recovered %d, checkpoints %d, errors %d)%n",
        stats.duration().toMillis(), stats.expiredFound(), stats.recovered(), stats.checkpointsCreated(), stats.errors());
    RecoveryStats idle = sweep.scanAndRecover();
    System.out.printf(Locale.ROOT, "idle sweep (nothing expired) over 1,000,000: %d ms%n", idle.duration().toMillis());
    // the same 10,000 leases expired again, swept in batches of 2,000 instead of the default 500
    try (Connection c = store.dataSource().getConnection(); Statement st = c.createStatement()) {
      String past = pg ? "now() - interval '10 minutes'" : Long.toString(System.currentTimeMillis() - 600000L);
      st.execute("DELETE FROM tether_work_item_checkpoints");
      int n = st.executeUpdate("UPDATE tether_work_items SET status = 'in_progress', lease_holder = 'dead-worker',"
          + " lease_token = id, lease_expires_at = " + past + " WHERE status = 'pending'"
          + " AND error_message LIKE 'lease of dead-worker%'");
      st.execute(pg ? "ANALYZE tether_work_items" : "ANALYZE");
      RecoverySweep big = new RecoverySweep(store,
          RecoverySweepConfig.builder().cleanupEnabled(false).batchSize(2000).build());
      RecoveryStats s2 = big.scanAndRecover();
      System.out.printf(Locale.ROOT, "sweep of %d expired among 1,000,000, batchSize 2000: %d ms (recovered %d, checkpoints %d)%n",
          n, s2.duration().toMillis(), s2.recovered(), s2.checkpointsCreated());
    }
  }
}
