package dev.tether.bench.jdbc;

import com.github.kagkarlsson.scheduler.Scheduler;
import com.github.kagkarlsson.scheduler.SchedulerClient;
import com.github.kagkarlsson.scheduler.jdbc.DefaultJdbcCustomization;
import com.github.kagkarlsson.scheduler.jdbc.JdbcCustomization;
import com.github.kagkarlsson.scheduler.task.TaskInstance;
import com.github.kagkarlsson.scheduler.task.helper.OneTimeTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.tether.jdbc.AcquireRequest;
import dev.tether.jdbc.BenchRoster;
import dev.tether.Codec;
import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.Lease;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import dev.tether.mailbox.Message;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.sqlite.SQLiteConfig;
import org.sqlite.SQLiteDataSource;

/**
 * Tether side by side with db-scheduler, same process, same database server, same no-op work,
 * alternating runs (Tether, db-scheduler, Tether, ...), each run on a fresh database (SQLite
 * file / PostgreSQL schema, dropped after). Prints one table per backend and the ratios.
 *
 * <p>Run: {@code java -cp tether-bench/target/benchmarks.jar dev.tether.bench.jdbc.PeerComparison
 * [all|sqlite|sqlite-normal|sqlite-full|postgres] [items] [workers] [rounds]}; defaults all, 5000, 8, 2
 * ({@code sqlite}: NORMAL, then FULL); before the reported rounds, {@code -Dpeer.warmups} (default
 * 2) unreported rounds of every contender at full size; {@code -Dpeer.only=enqueue} runs only the
 * single-enqueue columns, and {@code -Dpeer.contender=tether} (or {@code db-scheduler}) runs that
 * contender alone (no ratios), for measuring the processes' CPU per item from outside; {@code
 * -Dpeer.singleItems=N} sets the items of enq1/s and enq1x8/s (default 10,000: a second or more
 * per contender; with 2,000, a fifth of a second, the JIT had not finished compiling Tether's
 * group path in some first reported rounds, which then spent 3 to 5 times the steady JVM CPU per
 * item), {@code -Dpeer.producers=N}
 * the producer threads of enq1x8/s (default 8), and {@code -Dpeer.noListener=true} leaves
 * Tether's enqueues without a listening store (no wake-ups sent).
 * PostgreSQL from {@code TETHER_TEST_PG_URL} (default
 * {@code jdbc:postgresql://127.0.0.1:5432/test?user=postgres}).
 *
 * <p>Figures are measured, never asserted. Columns:
 *
 * <ul>
 *   <li>enq1/s: single enqueues per second, one thread, one transaction each (Tether
 *       {@code LeaseManager.enqueue}, db-scheduler {@code SchedulerClient.schedule}); on PostgreSQL
 *       Tether's with another store listening for the queue, so that each enqueue (and each
 *       group, below) notifies it ({@code listeningProcess});
 *   <li>enq1x8/s: the same single enqueues (as many items in all) from {@link #PRODUCERS}
 *       producer threads at once, each calling the single-item enqueue (Tether: concurrent calls
 *       may share a commit: on PostgreSQL with group commit on, unless the library's system
 *       property {@code -Dtether.groupEnqueues=false} turns that off for a comparison);
 *   <li>grp, grp%: Tether on PostgreSQL: the mean size of the groups of more than one item that
 *       the enq1x8/s enqueues were written in, and the share of its items written in such groups;
 *   <li>cpuUs, jvmUs: CPU per enq1x8/s item in microseconds, of the whole machine (every process,
 *       the database's included, from {@code /proc/stat}: meaningful only on a machine doing
 *       nothing else) and of the harness's JVM;
 *   <li>cpuDUs, jvmDUs: the same per drained item, for Tether's drainD (deferred
 *       acknowledgements) and db-scheduler's drain;
 *   <li>heard: on PostgreSQL, the wake-ups the listening process heard during Tether's enq1/s and
 *       enq1x8/s (it holds a slot of both queues' rosters; concurrent enqueues share a wake-up);
 *   <li>enqB/s: batch enqueue, chunks of 1000 (Tether {@code enqueueAll}, db-scheduler
 *       {@code scheduleBatch});
 *   <li>drain/s: a pre-filled queue of {@code items} no-op items drained by {@code workers}
 *       threads (Tether via {@code JdbcMailbox.receive(10)} + {@code acknowledge()}, and via
 *       {@code LeaseManager.acquire(batch 10)} + {@code complete} (drainLM), and via {@code
 *       receive(10)} + {@code JdbcMailbox.acknowledgeAll} (drainB), and via {@code receive(10)} +
 *       per-message {@code acknowledge()} on a mailbox with deferred acknowledgements, {@code
 *       deferredAcknowledgements(64, 5 ms)} (drainD, the opt-in mode "deferred"; {@code
 *       -Dpeer.deferBatch} and {@code -Dpeer.deferDelayMs} change the two; timed until the last acknowledgement is durable:
 *       the mailbox's close is inside the timing); db-scheduler via its own executor of {@code
 *       workers} threads, timed until the table is empty);
 *   <li>lat p50/p99: enqueue-to-start latency on an idle worker (200 items sent 10 ms apart),
 *       producer on the same store/scheduler instance ("same"), and on PostgreSQL also from a
 *       separate store/client instance ("other", as another process would);
 *   <li>heap: peak heap (sum of heap pools' peak usage) during the run.
 * </ul>
 */
public final class PeerComparison {
  private PeerComparison() {}

  private static final int LATENCY_SAMPLES = 200;
  /** Producer threads of the enq1x8/s column: {@code -Dpeer.producers}, default 8. */
  static final int PRODUCERS = Integer.getInteger("peer.producers", 8);
  /** {@code -Dpeer.noListener=true}: no listening store for Tether's enqueues (no wake-ups sent). */
  private static final boolean NO_LISTENER = Boolean.getBoolean("peer.noListener");
  private static final Duration DB_SCHEDULER_POLL = Duration.ofMillis(100);
  /** drainD's {@code deferredAcknowledgements(maxBatch, maxDelay)}: 64 and 5 ms unless set. */
  static final int DEFER_BATCH = Integer.getInteger("peer.deferBatch", 64);
  static final int DEFER_DELAY_MS = Integer.getInteger("peer.deferDelayMs", 5);
  /**
   * {@code -Dpeer.only=enqueue}: only the single-enqueue columns (enq1/s, enq1x8/s, heard), for
   * many short alternating rounds.
   */
  static final boolean ENQUEUE_ONLY = "enqueue".equals(System.getProperty("peer.only"));
  /**
   * {@code -Dpeer.singleItems=N}: items of the enq1/s and enq1x8/s columns (default 10,000,
   * whatever the run's items).
   */
  private static final int SINGLE_ITEMS = Integer.getInteger("peer.singleItems", 10_000);

  /** One backend: how to get a fresh database for one run. */
  private enum Backend {
    SQLITE_NORMAL("SQLite file, WAL, synchronous=NORMAL"),
    SQLITE_FULL("SQLite file, WAL, synchronous=FULL"),
    POSTGRES("PostgreSQL, synchronous_commit=on");

    final String label;

    Backend(String label) {
      this.label = label;
    }

    boolean sqlite() {
      return this != POSTGRES;
    }
  }

  /** A fresh database for one run. */
  private static final class Db implements AutoCloseable {
    final Backend backend;
    final String url;
    final BenchSchema schema;

    Db(Backend backend) throws Exception {
      this.backend = backend;
      if (backend.sqlite()) {
        Path dir = Files.createTempDirectory("tether-peer");
        url = "jdbc:sqlite:" + dir.resolve("bench.db");
        schema = null;
      } else {
        schema = BenchSchema.create("tether_peer_");
        url = schema.url();
      }
    }

    TetherStoreConfig tetherConfig(boolean optimized) {
      return TetherStoreConfig.builder()
          .sqliteSynchronous(backend == Backend.SQLITE_FULL
              ? TetherStoreConfig.SqliteSynchronous.FULL : TetherStoreConfig.SqliteSynchronous.NORMAL)
          .groupCommit(optimized)
          .notifications(optimized)
          .build();
    }

    /** A HikariCP pool configured like the one TetherStore opens (same size and pragmas). */
    HikariDataSource pool(String name) {
      HikariConfig hc = new HikariConfig();
      hc.setPoolName(name);
      if (backend.sqlite()) {
        SQLiteConfig sc = new SQLiteConfig();
        sc.setJournalMode(SQLiteConfig.JournalMode.WAL);
        sc.setSynchronous(backend == Backend.SQLITE_FULL ? SQLiteConfig.SynchronousMode.FULL : SQLiteConfig.SynchronousMode.NORMAL);
        sc.setBusyTimeout(5000);
        SQLiteDataSource sds = new SQLiteDataSource(sc);
        sds.setUrl(url);
        hc.setDataSource(sds);
        hc.setMaximumPoolSize(TetherStoreConfig.DEFAULT_SQLITE_POOL_SIZE);
      } else {
        hc.setJdbcUrl(url);
        hc.setMaximumPoolSize(TetherStoreConfig.DEFAULT_POSTGRES_POOL_SIZE);
      }
      return new HikariDataSource(hc);
    }

    @Override
    public void close() throws Exception {
      if (schema != null) {
        schema.close();
      }
    }
  }

  /** Figures of one run. */
  private static final class Row {
    final String who;
    final Map<String, Double> v = new LinkedHashMap<>();

    Row(String who) {
      this.who = who;
    }
  }

  private static final String[] COLUMNS = {
    "enq1/s", "enq1x8/s", "grp", "grp%", "cpuUs", "jvmUs", "heard", "enqB/s", "drain/s", "drainLM/s", "drainB/s", "drainD/s", "cpuDUs", "jvmDUs", "lat50ms", "lat99ms", "latO50ms", "latO99ms", "heapMB"
  };

  public static void main(String[] args) throws Exception {
    String which = args.length > 0 ? args[0] : "all";
    int items = args.length > 1 ? Integer.parseInt(args[1]) : 5000;
    int workers = args.length > 2 ? Integer.parseInt(args[2]) : 8;
    int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 2;
    boolean baseline = !Boolean.getBoolean("peer.noBaseline");
    List<Backend> backends = new ArrayList<>();
    for (Backend b : Backend.values()) {
      if (which.equals("all") || (which.equals("sqlite") && b.sqlite())
          || which.equals(b.name().toLowerCase(Locale.ROOT).replace('_', '-'))) {
        backends.add(b);
      }
    }
    if (backends.isEmpty()) {
      throw new IllegalArgumentException("unknown backend '" + which
          + "': use all, sqlite (NORMAL and FULL), sqlite-normal, sqlite-full or postgres");
    }
    System.out.printf(Locale.ROOT, "PeerComparison: %d items, %d workers, %d rounds after %d warm-up rounds; %d cores,"
        + " max heap %d MB, java %s%n",
        items, workers, rounds, Integer.getInteger("peer.warmups", 2), Runtime.getRuntime().availableProcessors(),
        Runtime.getRuntime().maxMemory() >> 20, System.getProperty("java.version"));
    // Warm-up rounds of every contender, full size, not reported: after one short warm-up
    // db-scheduler's PostgreSQL drain kept rising for two more rounds, which flattered the first
    // rounds' ratios (docs/PERFORMANCE.md).
    int warmups = Integer.getInteger("peer.warmups", 2);
    // -Dpeer.contender=tether or db-scheduler: that one alone (no ratios), e.g. to time the
    // processes' CPU per item from outside
    String contender = System.getProperty("peer.contender", "both");
    if (!List.of("both", "tether", "db-scheduler").contains(contender)) {
      throw new IllegalArgumentException("peer.contender: both, tether or db-scheduler, was " + contender);
    }
    boolean tether = !contender.equals("db-scheduler");
    boolean dbs = !contender.equals("tether");
    baseline &= tether && dbs;
    for (Backend b : backends) {
      List<Row> rows = new ArrayList<>();
      for (int r = -warmups; r < rounds; r++) {
        List<Row> round = new ArrayList<>();
        if (tether) {
          round.add(runTether(b, items, workers, true));
        }
        if (dbs) {
          round.add(runDbScheduler(b, items, workers));
        }
        if (baseline) {
          round.add(runTether(b, items, workers, false));
        }
        if (r >= 0) {
          rows.addAll(round);
        }
      }
      print(b, rows, tether && dbs ? (baseline ? 3 : 2) : 1);
    }
  }

  private static void print(Backend b, List<Row> rows, int perRound) {
    System.out.println();
    System.out.println("== " + b.label + " ==");
    StringBuilder h = new StringBuilder(String.format(Locale.ROOT, "%-14s", "run"));
    for (String c : COLUMNS) {
      h.append(String.format(Locale.ROOT, "%11s", c));
    }
    System.out.println(h);
    for (Row r : rows) {
      StringBuilder s = new StringBuilder(String.format(Locale.ROOT, "%-14s", r.who));
      for (String c : COLUMNS) {
        Double x = r.v.get(c);
        s.append(x == null ? String.format(Locale.ROOT, "%11s", "-")
            : String.format(Locale.ROOT, x >= 100 ? "%11.0f" : "%11.1f", x));
      }
      System.out.println(s);
    }
    System.out.println("Tether enqueue-to-start, target p50 <= 5 ms and p99 <= 50 ms: " + latencyTarget(rows));
    if (perRound < 2) {
      System.out.flush();
      return; // one contender: no ratios
    }
    // ratios Tether / db-scheduler per round, for throughput columns
    for (String c : new String[] {"enq1/s", "enq1x8/s", "enqB/s", "drain/s"}) {
      List<String> ratios = new ArrayList<>();
      List<String> gains = new ArrayList<>();
      for (int i = 0; i + 1 < rows.size(); i += perRound) {
        Double t = rows.get(i).v.get(c);
        Double d = rows.get(i + 1).v.get(c);
        if (t != null && d != null && d > 0) {
          ratios.add(String.format(Locale.ROOT, "%.2f", t / d));
        }
        if (perRound == 3) {
          Double base = rows.get(i + 2).v.get(c);
          if (t != null && base != null && base > 0) {
            gains.add(String.format(Locale.ROOT, "%.2f", t / base));
          }
        }
      }
      System.out.println("ratio Tether/db-scheduler " + c + ": " + String.join(", ", ratios)
          + (gains.isEmpty() ? "" : "   (Tether/tether-base: " + String.join(", ", gains) + ")"));
    }
    List<String> lm = new ArrayList<>();
    for (int i = 0; i + 1 < rows.size(); i += perRound) {
      Double t = rows.get(i).v.get("drainLM/s");
      Double d = rows.get(i + 1).v.get("drain/s");
      if (t != null && d != null && d > 0) {
        lm.add(String.format(Locale.ROOT, "%.2f", t / d));
      }
    }
    System.out.println("ratio Tether(LeaseManager)/db-scheduler drain/s: " + String.join(", ", lm));
    List<String> bb = new ArrayList<>();
    for (int i = 0; i + 1 < rows.size(); i += perRound) {
      Double t = rows.get(i).v.get("drainB/s");
      Double d = rows.get(i + 1).v.get("drain/s");
      if (t != null && d != null && d > 0) {
        bb.add(String.format(Locale.ROOT, "%.2f", t / d));
      }
    }
    System.out.println("ratio Tether(acknowledgeAll)/db-scheduler drain/s: " + String.join(", ", bb));
    List<String> dd = new ArrayList<>();
    for (int i = 0; i + 1 < rows.size(); i += perRound) {
      Double t = rows.get(i).v.get("drainD/s");
      Double d = rows.get(i + 1).v.get("drain/s");
      if (t != null && d != null && d > 0) {
        dd.add(String.format(Locale.ROOT, "%.2f", t / d));
      }
    }
    System.out.println("ratio Tether(per-message acknowledge, deferred: deferredAcknowledgements("
        + DEFER_BATCH + ", " + DEFER_DELAY_MS + " ms))/db-scheduler drain/s: " + String.join(", ", dd));
    System.out.flush();
  }

  /**
   * Tether's enqueue-to-start in each round against the README's target (p50 at most 5 ms, p99 at
   * most 50 ms, from the same store and, on PostgreSQL, from another): in how many rounds both
   * held, and the worst of each, so that a breach shows in the summary, not only in a column.
   */
  private static String latencyTarget(List<Row> rows) {
    int rounds = 0;
    int met = 0;
    double worst50 = 0;
    double worst99 = 0;
    for (Row row : rows) {
      if (!row.who.equals("tether")) {
        continue; // db-scheduler, and Tether without its optimizations
      }
      Map<String, Double> v = row.v;
      boolean measured = false;
      boolean ok = true;
      for (String[] pair : new String[][] {{"lat50ms", "lat99ms"}, {"latO50ms", "latO99ms"}}) {
        Double p50 = v.get(pair[0]);
        Double p99 = v.get(pair[1]);
        if (p50 == null || p99 == null) {
          continue;
        }
        measured = true;
        worst50 = Math.max(worst50, p50);
        worst99 = Math.max(worst99, p99);
        ok &= p50 <= 5 && p99 <= 50;
      }
      if (measured) {
        rounds++;
        met += ok ? 1 : 0;
      }
    }
    return rounds == 0 ? "not measured" : String.format(Locale.ROOT,
        "met in %d of %d rounds (worst p50 %.1f ms, worst p99 %.1f ms)", met, rounds, worst50, worst99);
  }

  // ------------------------------------------------------------------ heap

  private static void resetPeakHeap() {
    System.gc();
    for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
      if (p.getType() == MemoryType.HEAP) {
        p.resetPeakUsage();
      }
    }
  }

  private static double peakHeapMb() {
    long sum = 0;
    for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
      if (p.getType() == MemoryType.HEAP && p.getPeakUsage() != null) {
        sum += p.getPeakUsage().getUsed();
      }
    }
    return sum / (1024.0 * 1024.0);
  }

  private static double[] percentiles(long[] nanos) {
    long[] s = nanos.clone();
    Arrays.sort(s);
    return new double[] {s[s.length / 2] / 1e6, s[Math.min(s.length - 1, s.length * 99 / 100)] / 1e6};
  }

  // ------------------------------------------------------------------ Tether

  /**
   * One Tether run; {@code optimized == false} ("tether-base") turns group commit (with it, on
   * PostgreSQL, the grouping of concurrent single enqueues) and notifications off, to show what
   * they bring in the same process run. Batch enqueue, the
   * in-process wake-up and, on PostgreSQL, the one-statement acquisition and single enqueue are
   * not switchable and are on in both.
   */
  private static Row runTether(Backend b, int items, int workers, boolean optimized) throws Exception {
    Row row = new Row(optimized ? "tether" : "tether-base");
    resetPeakHeap();
    try (Db db = new Db(b); TetherStore store = TetherStore.open(db.url, db.tetherConfig(optimized));
        Listening listening = optimized && !b.sqlite() && !NO_LISTENER ? listeningProcess(db.url, "single", "single-x8") : null) {
      LeaseManager producer = new LeaseManager(store, "producer");
      int single = SINGLE_ITEMS;
      long t0 = System.nanoTime();
      for (int i = 0; i < single; i++) {
        producer.enqueue(NewWorkItem.of("single", "noop"));
      }
      row.v.put("enq1/s", single / ((System.nanoTime() - t0) / 1e9));
      long[] before = BenchRoster.sharedEnqueueGroups(store);
      row.v.put("enq1x8/s", single / producersSeconds(row, single,
          i -> producer.enqueue(NewWorkItem.of("single-x8", "noop"))));
      long[] after = BenchRoster.sharedEnqueueGroups(store);
      long groups = after[1] - before[1];
      // the mean size of the groups of several, and the share of the items written in them
      row.v.put("grp", groups == 0 ? 0 : (after[0] - before[0]) / (double) groups);
      row.v.put("grp%", 100.0 * (after[0] - before[0]) / single);
      if (listening != null) {
        row.v.put("heard", (double) listening.heard());
      }
      if (ENQUEUE_ONLY) {
        row.v.put("heapMB", peakHeapMb());
        return row;
      }
      // as db-scheduler's run empties its table here: the drains start from the same state
      try (Connection c = store.dataSource().getConnection(); Statement st = c.createStatement()) {
        st.execute("DELETE FROM tether_work_items WHERE queue IN ('single', 'single-x8')");
      }

      t0 = System.nanoTime();
      DrainBenchmark.prefill(producer, "drain", items);
      row.v.put("enqB/s", items / ((System.nanoTime() - t0) / 1e9));

      JdbcMailbox<String, String> mailbox = JdbcMailbox.ofStrings(store, "drain");
      row.v.put("drain/s", items / drainSeconds(workers, () -> {
        int n = 0;
        while (true) {
          List<Message<String, String>> got = mailbox.receive(10, Duration.ofMinutes(5), Duration.ZERO);
          if (got.isEmpty()) {
            return n;
          }
          for (Message<String, String> m : got) {
            m.acknowledge();
            n++;
          }
        }
      }, items));

      DrainBenchmark.prefill(producer, "drain-b", items);
      JdbcMailbox<String, String> batchBox = JdbcMailbox.ofStrings(store, "drain-b");
      row.v.put("drainB/s", items / drainSeconds(workers, () -> {
        int n = 0;
        while (true) {
          List<Message<String, String>> got = batchBox.receive(10, Duration.ofMinutes(5), Duration.ZERO);
          if (got.isEmpty()) {
            return n;
          }
          if (!batchBox.acknowledgeAll(got).isEmpty()) {
            throw new IllegalStateException("acknowledgeAll refused some of " + got.size());
          }
          n += got.size();
        }
      }, items));

      DrainBenchmark.prefill(producer, "drain-d", items);
      JdbcMailbox<String, String> deferredBox = JdbcMailbox.builder(store, "drain-d", Codec.utf8(), Codec.utf8())
          .deferredAcknowledgements(DEFER_BATCH, Duration.ofMillis(DEFER_DELAY_MS)).build();
      long dm0 = machineBusyNanos();
      long dj0 = jvmCpuNanos();
      long d0 = System.nanoTime();
      drainSeconds(workers, () -> {
        int n = 0;
        while (true) {
          List<Message<String, String>> got = deferredBox.receive(10, Duration.ofMinutes(5), Duration.ZERO);
          if (got.isEmpty()) {
            return n;
          }
          for (Message<String, String> m : got) {
            m.acknowledge();
            n++;
          }
        }
      }, items);
      deferredBox.close(); // the last acknowledgements durable: inside the timing
      row.v.put("drainD/s", items / ((System.nanoTime() - d0) / 1e9));
      putCpuPerItem(row, "cpuDUs", "jvmDUs", dm0, dj0, items);
      if (deferredBox.deferredAcknowledgementsCommitted() != items) {
        throw new IllegalStateException("deferred drain committed " + deferredBox.deferredAcknowledgementsCommitted()
            + " acknowledgements of " + items + " (refused " + deferredBox.deferredAcknowledgementsRefused()
            + ", failed " + deferredBox.deferredAcknowledgementsFailed() + ")");
      }

      DrainBenchmark.prefill(producer, "drain-lm", items);
      row.v.put("drainLM/s", items / drainSeconds(workers, () -> {
        LeaseManager w = new LeaseManager(store, "worker-" + Thread.currentThread().getName());
        int n = 0;
        while (true) {
          List<Lease> leases = w.acquire(AcquireRequest.batch("drain-lm", Duration.ofMinutes(5), 10));
          if (leases.isEmpty()) {
            return n;
          }
          for (Lease l : leases) {
            w.complete(l.itemId(), l.token(), null);
            n++;
          }
        }
      }, items));

      double[] same = tetherLatency(store, store, workers);
      row.v.put("lat50ms", same[0]);
      row.v.put("lat99ms", same[1]);
      if (!b.sqlite()) {
        try (TetherStore other = TetherStore.open(db.url, db.tetherConfig(optimized))) {
          double[] o = tetherLatency(store, other, workers);
          row.v.put("latO50ms", o[0]);
          row.v.put("latO99ms", o[1]);
        }
      }
      mailbox.close();
    }
    row.v.put("heapMB", peakHeapMb());
    return row;
  }


  /** One single-item enqueue, the {@code i}th of its run. */
  @FunctionalInterface
  private interface Enqueue {
    void run(int i) throws Exception;
  }

  /**
   * Another "process" listening for the single enqueues' queues while they are timed, so that
   * Tether's enqueues have someone to wake (with nobody waiting for a queue an enqueue notifies
   * nobody): a connection of its own that takes a slot of each queue's wake-up roster, as a store
   * whose receivers wait for the queue does, {@code LISTEN}s on the slots' channels and counts the
   * wake-ups it hears ({@link Listening#heard}), doing nothing else: an idle process would take
   * the item it is woken for, which is the drain's cost, not the enqueue's. (Until 26 Nov it was a
   * store whose receivers waited with a work-type filter no item had: each wake-up then cost a
   * filtered acquisition scanning every pending item of the queue, up to 2,000, so that the
   * listener spun on the database's CPU through the whole timing.)
   */
  private static Listening listeningProcess(String url, String... queues) throws SQLException {
    Connection c = DriverManager.getConnection(url);
    try {
      c.setAutoCommit(true);
      String schema;
      try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT current_schema()")) {
        rs.next();
        schema = rs.getString(1);
      }
      for (String queue : queues) {
        String channel = BenchRoster.claimSlot(c, schema, queue);
        try (Statement st = c.createStatement()) {
          st.execute("LISTEN " + channel);
        }
      }
    } catch (SQLException | RuntimeException e) {
      c.close();
      throw e;
    }
    return new Listening(c);
  }

  /** The listening connection of {@link #listeningProcess}: its thread counts what it hears. */
  private static final class Listening implements AutoCloseable {
    private final Connection c;
    private final AtomicBoolean stop = new AtomicBoolean();
    private final AtomicInteger heard = new AtomicInteger();
    private final Thread thread;

    Listening(Connection c) {
      this.c = c;
      this.thread = new Thread(this::run, "peer-listener");
      thread.setDaemon(true);
      thread.start();
    }

    private void run() {
      try {
        PGConnection pg = c.unwrap(PGConnection.class);
        while (!stop.get()) {
          PGNotification[] got = pg.getNotifications(200);
          if (got != null) {
            heard.addAndGet(got.length);
          }
        }
      } catch (SQLException e) {
        if (!stop.get()) {
          throw new IllegalStateException("the listening connection failed", e);
        }
      }
    }

    /** Wake-ups heard so far. */
    int heard() {
      return heard.get();
    }

    @Override
    public void close() throws Exception {
      stop.set(true);
      thread.join(5_000);
      c.close();
    }
  }

  /**
   * Runs {@code total} single enqueues from {@link #PRODUCERS} threads (item i on thread i mod
   * {@link #PRODUCERS}); returns the seconds from the moment all threads were ready to the last
   * call's return; puts on {@code row} the CPU the machine (cpuUs: every process, the database's
   * included, from {@code /proc/stat}) and this JVM (jvmUs) spent per item meanwhile, in
   * microseconds, where the platform tells.
   */
  private static double producersSeconds(Row row, int total, Enqueue enqueue) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(PRODUCERS);
    try {
      CountDownLatch ready = new CountDownLatch(PRODUCERS);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<Integer>> done = new ArrayList<>();
      for (int t = 0; t < PRODUCERS; t++) {
        int first = t;
        done.add(pool.submit(() -> {
          ready.countDown();
          go.await();
          int n = 0;
          for (int i = first; i < total; i += PRODUCERS) {
            enqueue.run(i);
            n++;
          }
          return n;
        }));
      }
      ready.await();
      long machine0 = machineBusyNanos();
      long jvm0 = jvmCpuNanos();
      long start = System.nanoTime();
      go.countDown();
      int sum = 0;
      for (Future<Integer> f : done) {
        sum += f.get();
      }
      double secs = (System.nanoTime() - start) / 1e9;
      putCpuPerItem(row, "cpuUs", "jvmUs", machine0, jvm0, total);
      if (sum != total) {
        throw new IllegalStateException("enqueued " + sum + " items, expected " + total);
      }
      return secs;
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * Puts on {@code row} the CPU per item, in microseconds, the machine ({@code machineKey}) and
   * this JVM ({@code jvmKey}) spent since the readings {@code machine0} and {@code jvm0}, where
   * the platform tells.
   */
  private static void putCpuPerItem(Row row, String machineKey, String jvmKey, long machine0, long jvm0,
      int items) {
    long machine1 = machineBusyNanos();
    long jvm1 = jvmCpuNanos();
    if (machine0 >= 0 && machine1 >= 0) {
      row.v.put(machineKey, (machine1 - machine0) / 1e3 / items);
    }
    if (jvm0 >= 0 && jvm1 >= 0) {
      row.v.put(jvmKey, (jvm1 - jvm0) / 1e3 / items);
    }
  }

  /**
   * CPU time every process of the machine spent so far (user, nice, system, interrupts, steal),
   * from the first line of {@code /proc/stat}, or -1 where there is none.
   */
  private static long machineBusyNanos() {
    try {
      String[] f = java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/stat")).get(0).trim().split("\\s+");
      long ticks = 0;
      for (int i : new int[] {1, 2, 3, 6, 7, 8}) { // user nice system irq softirq steal
        ticks += Long.parseLong(f[i]);
      }
      return ticks * 10_000_000L; // USER_HZ is 100 on Linux
    } catch (java.io.IOException | RuntimeException e) {
      return -1;
    }
  }

  /** CPU time of this JVM so far, or -1 where the platform does not tell. */
  private static long jvmCpuNanos() {
    java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    return os instanceof com.sun.management.OperatingSystemMXBean
        ? ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() : -1;
  }

  /** A drain task returning how many items it finished. */
  @FunctionalInterface
  private interface DrainTask {
    int run() throws Exception;
  }

  private static double drainSeconds(int workers, DrainTask task, int expected) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(workers);
    try {
      long start = System.nanoTime();
      List<Future<Integer>> done = new ArrayList<>();
      for (int t = 0; t < workers; t++) {
        done.add(pool.submit(task::run));
      }
      int total = 0;
      for (Future<Integer> f : done) {
        total += f.get();
      }
      double secs = (System.nanoTime() - start) / 1e9;
      if (total != expected) {
        throw new IllegalStateException("drained " + total + " items, expected " + expected);
      }
      return secs;
    } finally {
      pool.shutdownNow();
    }
  }

  /** Idle receivers on {@code consumerStore}, items sent through {@code producerStore}. */
  private static double[] tetherLatency(TetherStore consumerStore, TetherStore producerStore, int workers)
      throws Exception {
    String queue = "latency-" + UUID.randomUUID().toString().substring(0, 6);
    JdbcMailbox<String, String> in = JdbcMailbox.ofStrings(consumerStore, queue);
    JdbcMailbox<String, String> out = JdbcMailbox.ofStrings(producerStore, queue);
    Map<String, Long> sentAt = new ConcurrentHashMap<>();
    long[] lat = new long[LATENCY_SAMPLES];
    AtomicInteger seen = new AtomicInteger();
    AtomicBoolean stop = new AtomicBoolean();
    ExecutorService pool = Executors.newFixedThreadPool(workers);
    CountDownLatch all = new CountDownLatch(LATENCY_SAMPLES);
    for (int t = 0; t < workers; t++) {
      pool.submit(() -> {
        while (!stop.get()) {
          for (Message<String, String> m : in.receive(1, Duration.ofMinutes(5), Duration.ofSeconds(1))) {
            long now = System.nanoTime();
            Long s = sentAt.get(m.body());
            int i = seen.getAndIncrement();
            if (s != null && i < lat.length) {
              lat[i] = now - s;
            }
            m.acknowledge();
            all.countDown();
          }
        }
        return null;
      });
    }
    Thread.sleep(300); // let every receiver block
    for (int i = 0; i < LATENCY_SAMPLES; i++) {
      String body = "m" + i;
      sentAt.put(body, System.nanoTime());
      out.send(body);
      Thread.sleep(10);
    }
    if (!all.await(60, TimeUnit.SECONDS)) {
      throw new IllegalStateException("latency run: only " + seen.get() + " of " + LATENCY_SAMPLES + " items started");
    }
    stop.set(true);
    in.close();
    pool.shutdown();
    pool.awaitTermination(10, TimeUnit.SECONDS);
    return percentiles(lat);
  }

  // ------------------------------------------------------------------ db-scheduler

  static void createDbSchedulerTable(DataSource ds, boolean sqlite) throws Exception {
    try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
      if (sqlite) {
        st.execute("CREATE TABLE scheduled_tasks (task_name varchar(100), task_instance varchar(100),"
            + " task_data blob, execution_time TIMESTAMP, picked BIT, picked_by varchar(50),"
            + " last_success TIMESTAMP, last_failure TIMESTAMP, consecutive_failures INT,"
            + " last_heartbeat TIMESTAMP, version BIGINT, priority SMALLINT, PRIMARY KEY (task_name, task_instance))");
      } else {
        st.execute("CREATE TABLE scheduled_tasks (task_name text not null, task_instance text not null,"
            + " task_data bytea, execution_time timestamp with time zone not null, picked boolean not null,"
            + " picked_by text, last_success timestamp with time zone, last_failure timestamp with time zone,"
            + " consecutive_failures int, last_heartbeat timestamp with time zone, version bigint not null,"
            + " priority smallint, PRIMARY KEY (task_name, task_instance))");
      }
      st.execute("CREATE INDEX execution_time_idx ON scheduled_tasks (execution_time)");
      st.execute("CREATE INDEX last_heartbeat_idx ON scheduled_tasks (last_heartbeat)");
      st.execute("CREATE INDEX priority_execution_time_idx ON scheduled_tasks (priority desc, execution_time asc)");
    }
  }

  private static long countRows(DataSource ds) throws Exception {
    try (Connection c = ds.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM scheduled_tasks")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /**
   * db-scheduler as its documentation recommends for throughput: lock-and-fetch polling on
   * PostgreSQL ({@code pollUsingLockAndFetch(0.5, 1.0)}), the default fetch-and-lock-on-execute
   * elsewhere (lock-and-fetch needs a dialect with single-statement lock-and-fetch; 16.7.1 has
   * no SQLite dialect, so SQLite runs on its generic SQL), {@code threads(workers)},
   * {@code pollingInterval(100 ms)} (Tether's default poll interval),
   * {@code enableImmediateExecution()}.
   */
  private static Scheduler buildScheduler(Backend b, DataSource ds, OneTimeTask<Void> task, int workers) {
    var builder = Scheduler.create(ds, task)
        .threads(workers)
        .pollingInterval(DB_SCHEDULER_POLL)
        .enableImmediateExecution();
    if (b.sqlite()) {
      builder.jdbcCustomization(customization(b));
    } else {
      builder.pollUsingLockAndFetch(0.5, 1.0);
    }
    return builder.build();
  }

  /**
   * db-scheduler 16.7.1 has no SQLite dialect (its generic SQL ends the due query with {@code
   * OFFSET 0 ROWS FETCH FIRST n ROWS ONLY}, which SQLite rejects). Later releases add one: the
   * generic dialect with timestamps persisted in UTC and a {@code LIMIT n} clause, and no
   * lock-and-fetch. This is the same, configured through its public extension point.
   */
  private static SchedulerClient client(DataSource ds, OneTimeTask<Void> task, Backend b) {
    SchedulerClient.Builder builder = SchedulerClient.Builder.create(ds, task);
    if (b.sqlite()) {
      builder.jdbcCustomization(customization(b));
    }
    return builder.build();
  }

  private static JdbcCustomization customization(Backend b) {
    return new DefaultJdbcCustomization(true) {
      @Override
      public String getName() {
        return "SQLite";
      }

      @Override
      public String getQueryLimitPart(int limit) {
        return " LIMIT " + limit;
      }
    };
  }

  private static Row runDbScheduler(Backend b, int items, int workers) throws Exception {
    Row row = new Row("db-scheduler");
    resetPeakHeap();
    try (Db db = new Db(b); HikariDataSource ds = db.pool("dbs-pool")) {
      createDbSchedulerTable(ds, b.sqlite());
      AtomicInteger executed = new AtomicInteger();
      Map<String, Long> sentAt = new ConcurrentHashMap<>();
      long[] lat = new long[LATENCY_SAMPLES];
      AtomicInteger latSeen = new AtomicInteger();
      OneTimeTask<Void> noop = Tasks.oneTime("noop").execute((inst, ctx) -> {
        Long s = sentAt.get(inst.getId());
        if (s != null) {
          int i = latSeen.getAndIncrement();
          if (i < lat.length) {
            lat[i] = System.nanoTime() - s;
          }
        }
        executed.incrementAndGet();
      });
      SchedulerClient client = client(ds, noop, b);

      int single = SINGLE_ITEMS;
      long t0 = System.nanoTime();
      for (int i = 0; i < single; i++) {
        client.schedule(noop.instance("s" + i), Instant.now().plus(Duration.ofDays(365)));
      }
      row.v.put("enq1/s", single / ((System.nanoTime() - t0) / 1e9));
      row.v.put("enq1x8/s", single / producersSeconds(row, single,
          i -> client.schedule(noop.instance("p" + i), Instant.now().plus(Duration.ofDays(365)))));
      if (ENQUEUE_ONLY) {
        row.v.put("heapMB", peakHeapMb());
        return row;
      }
      try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
        st.execute("DELETE FROM scheduled_tasks");
      }

      t0 = System.nanoTime();
      for (int i = 0; i < items; i += 1000) {
        List<TaskInstance<?>> chunk = new ArrayList<>();
        for (int j = i; j < Math.min(items, i + 1000); j++) {
          chunk.add(noop.instance("d" + j));
        }
        client.scheduleBatch(chunk, Instant.now());
      }
      row.v.put("enqB/s", items / ((System.nanoTime() - t0) / 1e9));

      Scheduler scheduler = buildScheduler(b, ds, noop, workers);
      try {
        long dm0 = machineBusyNanos();
        long dj0 = jvmCpuNanos();
        t0 = System.nanoTime();
        scheduler.start();
        while (executed.get() < items || countRows(ds) > 0) {
          Thread.sleep(2);
          if (System.nanoTime() - t0 > TimeUnit.MINUTES.toNanos(10)) {
            throw new IllegalStateException("db-scheduler drained only " + executed.get() + " of " + items);
          }
        }
        row.v.put("drain/s", items / ((System.nanoTime() - t0) / 1e9));
        putCpuPerItem(row, "cpuDUs", "jvmDUs", dm0, dj0, items);

        // latency, producer on the same scheduler instance (immediate execution applies)
        Thread.sleep(300);
        for (int i = 0; i < LATENCY_SAMPLES; i++) {
          String id = "l" + i;
          sentAt.put(id, System.nanoTime());
          scheduler.schedule(noop.instance(id), Instant.now());
          Thread.sleep(10);
        }
        awaitCount(latSeen, LATENCY_SAMPLES);
        double[] same = percentiles(lat);
        row.v.put("lat50ms", same[0]);
        row.v.put("lat99ms", same[1]);
        if (!b.sqlite()) {
          latSeen.set(0);
          Arrays.fill(lat, 0);
          try (HikariDataSource otherDs = db.pool("dbs-other")) {
            SchedulerClient other = client(otherDs, noop, b);
            for (int i = 0; i < LATENCY_SAMPLES; i++) {
              String id = "o" + i;
              sentAt.put(id, System.nanoTime());
              other.schedule(noop.instance(id), Instant.now());
              Thread.sleep(10);
            }
            awaitCount(latSeen, LATENCY_SAMPLES);
          }
          double[] o = percentiles(lat);
          row.v.put("latO50ms", o[0]);
          row.v.put("latO99ms", o[1]);
        }
      } finally {
        scheduler.stop(); // also when a step failed: its threads must not outlive the pool
      }
    }
    row.v.put("heapMB", peakHeapMb());
    return row;
  }

  private static void awaitCount(AtomicInteger n, int expected) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (n.get() < expected) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("only " + n.get() + " of " + expected + " latency items executed");
      }
      Thread.sleep(1);
    }
  }
}
