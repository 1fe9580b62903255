package dev.tether.bench.jdbc;

import com.github.kagkarlsson.scheduler.SchedulerClient;
import com.github.kagkarlsson.scheduler.task.TaskInstance;
import com.github.kagkarlsson.scheduler.task.helper.OneTimeTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.tether.bench.jdbc.RecoveryAccount.Event;
import dev.tether.bench.jdbc.RecoveryAccount.Kind;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
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
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A fleet of worker processes on one PostgreSQL, Tether side by side with db-scheduler 16.7.1:
 * what the fleet costs the database while it works and while it idles, how fast a killed worker's
 * jobs run again elsewhere, how many processes one enqueue wakes, and whether memory and tables
 * stay flat over a soak. Measured, never asserted; figures and settings in docs/PERFORMANCE.md
 * ("Fleet").
 *
 * <p>Each worker is a child JVM ({@link FleetChild}): Tether, a {@code LoopGroup} of {@code c}
 * {@code MainLoop}s on {@code JdbcMailbox}es plus a {@code RecoverySweep} (as {@code tether
 * worker}, without its command runner); db-scheduler, a {@code Scheduler} with {@code c} threads,
 * lock-and-fetch polling every 100 ms. Jobs are simulated: each runs its length, beating every
 * second. Each run has a database of its own ({@code CREATE DATABASE}, dropped after), so that
 * {@code pg_stat_database} counts the fleet alone; WAL bytes are the whole server's.
 *
 * <p>Run: {@code java -cp tether-bench/target/benchmarks.jar dev.tether.bench.jdbc.FleetBench MODE
 * [key=value ...]}, MODE one of {@code work}, {@code recovery}, {@code idle}, {@code soak}; keys
 * (defaults in {@link #main}): {@code k} processes, {@code c} concurrency each, {@code pool}
 * connections each, {@code rounds}, {@code engines} ({@code tether,dbs}), and per mode {@code
 * queued}, {@code jobS}, {@code warmS}, {@code windowS} (work); {@code profiles}
 * ({@code default,tight}), {@code jobS} (recovery); {@code wakes} (idle); {@code minutes},
 * {@code rate}, {@code killEveryS} (soak). PostgreSQL from {@code TETHER_TEST_PG_URL} (default
 * {@code jdbc:postgresql://127.0.0.1:5432/test?user=postgres}).
 */
public final class FleetBench {
  private FleetBench() {}

  private static final long CLK_TCK = 100; // Linux's USER_HZ
  private static final Pattern PG_URL = Pattern.compile("(jdbc:postgresql://[^/]+/)([^?]*)(\\?.*)?");

  // ------------------------------------------------------------------ options

  private static Map<String, String> opts = new HashMap<>();

  private static int opt(String key, int dflt) {
    return Integer.parseInt(opts.getOrDefault(key, Integer.toString(dflt)));
  }

  private static String opt(String key, String dflt) {
    return opts.getOrDefault(key, dflt);
  }

  /** Worker settings of one engine: the child's arguments. */
  record Profile(String name, Map<String, String> tether, Map<String, String> dbs, String describe) {}

  /**
   * Work and idle: Tether extends at most once every 10 s (to now + 30 s, first lease 60 s);
   * db-scheduler beats every executing job every 10 s (dead after 4 missed): one write per
   * in-flight job per 10 s on both.
   */
  static final Profile WORK = new Profile("work",
      Map.of("visibilityMs", "60000", "everyMs", "10000", "extensionMs", "30000", "sweepMs", "30000"),
      Map.of("heartbeatMs", "10000", "missed", "4", "pollMs", "100"),
      "Tether visibility 60s, extend every 10s by 30s, sweep 30s; db-scheduler heartbeat 10s, 4 missed = dead,"
          + " poll 100ms lock-and-fetch");

  /**
   * Recovery, defaults: {@code tether worker}'s (visibility 2 min, extend every 20 s by 90 s,
   * sweep 30 s); db-scheduler with the same write budget (heartbeat 20 s) and its default
   * 6 missed heartbeats (dead after 2 min, as Tether's first lease). db-scheduler's own defaults
   * (5 min, 6 missed) would take 30 min.
   */
  static final Profile DEFAULTS = new Profile("default",
      Map.of("visibilityMs", "120000", "everyMs", "20000", "extensionMs", "90000", "sweepMs", "30000"),
      Map.of("heartbeatMs", "20000", "missed", "6", "pollMs", "100"),
      "Tether visibility 2m, extend every 20s by 90s (tether worker defaults); db-scheduler heartbeat 20s,"
          + " 6 missed (2m)");

  /**
   * Recovery, tightest: Tether's calibration rules ({@code interval < extension / 2}, {@code
   * extension < visibility}; no watchdog) with beats every second: extend every 1 s by 3 s, first
   * lease 4 s; db-scheduler's least heartbeat limit (4) at a 1 s heartbeat.
   */
  static final Profile TIGHT = new Profile("tight",
      Map.of("visibilityMs", "4000", "everyMs", "1000", "extensionMs", "3000", "sweepMs", "1000"),
      Map.of("heartbeatMs", "1000", "missed", "4", "pollMs", "100"),
      "Tether visibility 4s, extend every 1s by 3s, sweep 1s; db-scheduler heartbeat 1s, 4 missed (its least)");

  public static void main(String[] args) throws Exception {
    if (args.length == 0) {
      System.out.println("usage: FleetBench work|recovery|idle|soak [key=value ...] (see the class Javadoc)");
      return;
    }
    String mode = args[0];
    for (int i = 1; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      if (eq < 0) {
        throw new IllegalArgumentException("expected key=value, got " + args[i]);
      }
      opts.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    System.out.printf(Locale.ROOT, "FleetBench %s %s; %d cores, java %s, load %s%n", mode, opts,
        Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"), load());
    List<String> engines = Arrays.asList(opt("engines", "tether,dbs").split(","));
    switch (mode) {
      case "work" -> work(engines);
      case "recovery" -> recovery(engines);
      case "idle" -> idle(engines);
      case "soak" -> soak(engines);
      default -> throw new IllegalArgumentException("unknown mode " + mode);
    }
  }

  static String load() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (IOException e) {
      return "?";
    }
  }

  // ------------------------------------------------------------------ database and fleet

  /** A database of one run: created from the base URL's server, dropped (forcibly) on close. */
  static final class Db implements AutoCloseable {
    final String name = "tether_fleet_" + UUID.randomUUID().toString().substring(0, 8);
    final String server;
    final String params;
    final String baseUrl;

    Db() throws SQLException {
      baseUrl = BenchSchema.baseUrl();
      Matcher m = PG_URL.matcher(baseUrl);
      if (!m.matches()) {
        throw new IllegalArgumentException("not a jdbc:postgresql://host/db URL: " + baseUrl);
      }
      server = m.group(1);
      params = m.group(3) == null ? "" : m.group(3);
      try (Connection c = DriverManager.getConnection(baseUrl); Statement st = c.createStatement()) {
        st.execute("CREATE DATABASE " + name);
      }
    }

    String url(String application) {
      return server + name + (params.isEmpty() ? "?" : params + "&") + "ApplicationName=" + application;
    }

    Connection connect() throws SQLException {
      return DriverManager.getConnection(url("fleet-harness"));
    }

    @Override
    public void close() throws SQLException {
      try (Connection c = DriverManager.getConnection(baseUrl); Statement st = c.createStatement()) {
        st.execute("DROP DATABASE " + name + " WITH (FORCE)");
      }
    }
  }

  /** One child JVM. */
  static final class Child {
    final String name;
    final Process process;
    volatile boolean ready;
    volatile long heapAfterGc = -1;

    Child(String name, Process process) {
      this.name = name;
      this.process = process;
    }

    long pid() {
      return process.pid();
    }
  }

  /** The workers of one run, their events, and the run's database. */
  static final class Fleet implements AutoCloseable {
    final String engine;
    final Db db;
    final Profile profile;
    final int c;
    final int pool;
    final Map<String, String> extra = new HashMap<>();
    final List<Child> children = new CopyOnWriteArrayList<>();
    final List<Event> events = new CopyOnWriteArrayList<>();
    final Path logDir;

    Fleet(String engine, Profile profile, int c, int pool) throws Exception {
      this.engine = engine;
      this.profile = profile;
      this.c = c;
      this.pool = pool;
      this.db = new Db();
      System.out.println("  " + engine + " fleet on database " + db.name + " (" + profile.name() + ")");
      try (Connection c0 = db.connect(); Statement st = c0.createStatement()) {
        st.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect");
      } catch (SQLException e) {
        System.out.println("  pg_walinspect not available (" + e.getMessage() + "): no WAL bytes of this database alone");
      }
      this.logDir = Files.createDirectories(Path.of(System.getProperty("java.io.tmpdir"), "tether-fleet", db.name));
      if (engine.equals("dbs")) {
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(db.url("fleet-setup"));
        hc.setMaximumPoolSize(1);
        try (HikariDataSource ds = new HikariDataSource(hc)) {
          PeerComparison.createDbSchedulerTable(ds, false);
        }
      } else {
        try (TetherStore s = TetherStore.open(db.url("fleet-setup"), TetherStoreConfig.builder().maximumPoolSize(1).build())) {
          new LeaseManager(s, "setup"); // schema migrated by open
        }
      }
    }

    boolean tether() {
      return engine.equals("tether");
    }

    Child start(String name) throws IOException {
      List<String> cmd = new ArrayList<>();
      cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      cmd.addAll(Arrays.asList(opt("jvm", "-Xmx256m -XX:+UseSerialGC").split(" ")));
      cmd.add("-cp");
      cmd.add(System.getProperty("java.class.path"));
      cmd.add(FleetChild.class.getName());
      cmd.add("engine=" + engine);
      cmd.add("url=" + db.url("fleet-" + name));
      cmd.add("name=" + name);
      cmd.add("c=" + c);
      cmd.add("pool=" + pool);
      (tether() ? profile.tether() : profile.dbs()).forEach((k, v) -> cmd.add(k + "=" + v));
      extra.forEach((k, v) -> cmd.add(k + "=" + v));
      ProcessBuilder pb = new ProcessBuilder(cmd)
          .redirectError(logDir.resolve(name + ".log").toFile())
          .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
      Child child = new Child(name, pb.start());
      children.add(child);
      Thread reader = new Thread(() -> read(child), "fleet-read-" + name);
      reader.setDaemon(true);
      reader.start();
      return child;
    }

    private void read(Child child) {
      try (BufferedReader r = new BufferedReader(
          new InputStreamReader(child.process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          String[] f = line.split(" ");
          switch (f[0]) {
            case "READY" -> child.ready = true;
            case "S" -> events.add(new Event(Kind.START, f[1], child.name, Long.parseLong(f[3])));
            case "D" -> events.add(new Event(Kind.DONE, f[1], child.name, Long.parseLong(f[2])));
            case "M" -> child.heapAfterGc = Long.parseLong(f[1]);
            default -> { }
          }
        }
      } catch (IOException e) {
        // the child died: its stream ends
      }
    }

    void awaitReady(Duration timeout) throws InterruptedException {
      await("every worker ready", timeout, () -> children.stream().allMatch(ch -> ch.ready));
    }

    /** SIGKILL, and waits for the process to be gone; returns when it was sent (epoch micros). */
    long kill9(Child child) throws InterruptedException {
      long at = FleetChild.nowMicros();
      child.process.destroyForcibly();
      child.process.waitFor(30, TimeUnit.SECONDS);
      children.remove(child);
      return at;
    }

    long count(Kind kind, String keyPrefix, long fromMicros, long toMicros) {
      return events.stream().filter(e -> e.kind() == kind && e.key().startsWith(keyPrefix)
          && e.atMicros() >= fromMicros && e.atMicros() < toMicros).count();
    }

    @Override
    public void close() throws Exception {
      for (Child ch : children) {
        ch.process.destroy();
      }
      for (Child ch : children) {
        if (!ch.process.waitFor(20, TimeUnit.SECONDS)) {
          ch.process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
      }
      db.close();
    }
  }

  static void await(String what, Duration timeout, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("timed out after " + timeout + " waiting for " + what);
      }
      Thread.sleep(20);
    }
  }

  /** A producer in the harness process, as a separate application would enqueue. */
  static final class Producer implements AutoCloseable {
    final Fleet fleet;
    final TetherStore store;
    final LeaseManager lm;
    final HikariDataSource ds;
    final SchedulerClient client;
    final OneTimeTask<Void> task = Tasks.oneTime("job").execute((i, c) -> { });

    Producer(Fleet fleet) {
      this.fleet = fleet;
      if (fleet.tether()) {
        store = TetherStore.open(fleet.db.url("fleet-producer"), TetherStoreConfig.builder().maximumPoolSize(1).build());
        lm = new LeaseManager(store, "producer");
        ds = null;
        client = null;
      } else {
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(fleet.db.url("fleet-producer"));
        hc.setMaximumPoolSize(1);
        ds = new HikariDataSource(hc);
        client = SchedulerClient.Builder.create(ds, task).enablePriority().build();
        store = null;
        lm = null;
      }
    }

    /** Enqueues {@code key:millis} items, in batches of 1000. */
    void fill(List<String> specs) {
      for (int i = 0; i < specs.size(); i += 1000) {
        List<String> chunk = specs.subList(i, Math.min(specs.size(), i + 1000));
        if (lm != null) {
          List<NewWorkItem> items = new ArrayList<>();
          for (String s : chunk) {
            items.add(NewWorkItem.of("fleet", s));
          }
          lm.enqueueAll(items);
        } else {
          List<TaskInstance<?>> items = new ArrayList<>();
          for (String s : chunk) {
            items.add(task.instance(s));
          }
          client.scheduleBatch(items, Instant.now());
        }
      }
    }

    /**
     * One item, its own transaction; {@code urgent}: 10 above the engine's default priority
     * (Tether 0, db-scheduler 50; higher first on both).
     */
    void one(String spec, boolean urgent) {
      if (lm != null) {
        lm.enqueue(NewWorkItem.builder("fleet").input(spec).priority(urgent ? 10 : 0).build());
      } else {
        client.schedule(task.instanceBuilder(spec)
            .priority(OneTimeTask.DEFAULT_PRIORITY + (urgent ? 10 : 0)).build(), Instant.now());
      }
    }

    long pending() throws SQLException {
      try (Connection c = lm != null ? store.dataSource().getConnection() : ds.getConnection();
          Statement st = c.createStatement();
          ResultSet rs = st.executeQuery(lm != null
              ? "SELECT count(*) FROM tether_work_items WHERE status = 'pending'"
              : "SELECT count(*) FROM scheduled_tasks WHERE NOT picked")) {
        rs.next();
        return rs.getLong(1);
      }
    }

    @Override
    public void close() {
      if (store != null) {
        store.close();
      }
      if (ds != null) {
        ds.close();
      }
    }
  }

  // ------------------------------------------------------------------ PostgreSQL's own statistics

  /** A snapshot of the run's database: counters, per-table figures, backends' CPU. */
  static final class PgSnap {
    final long nanos = System.nanoTime();
    long xacts;
    long inserted;
    long updated;
    long deleted;
    double walBytes;
    String lsn;
    final Map<String, long[]> tables = new TreeMap<>(); // ins, upd, hot, del, scans, live, dead, bytes
    final Map<Integer, Long> cpuTicks = new HashMap<>();
    final Map<Integer, String> apps = new HashMap<>();

    static PgSnap take(Connection c) throws SQLException {
      PgSnap s = new PgSnap();
      try (Statement st = c.createStatement()) {
        try (ResultSet rs = st.executeQuery("SELECT xact_commit + xact_rollback, tup_inserted, tup_updated,"
            + " tup_deleted, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0'), pg_current_wal_lsn()::text"
            + " FROM pg_stat_database WHERE datname = current_database()")) {
          rs.next();
          s.lsn = rs.getString(6);
          s.xacts = rs.getLong(1);
          s.inserted = rs.getLong(2);
          s.updated = rs.getLong(3);
          s.deleted = rs.getLong(4);
          s.walBytes = rs.getDouble(5);
        }
        try (ResultSet rs = st.executeQuery("SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del,"
            + " coalesce(idx_scan, 0) + coalesce(seq_scan, 0), n_live_tup, n_dead_tup, pg_total_relation_size(relid)"
            + " FROM pg_stat_user_tables")) {
          while (rs.next()) {
            long[] v = new long[8];
            for (int i = 0; i < 8; i++) {
              v[i] = rs.getLong(i + 2);
            }
            s.tables.put(rs.getString(1), v);
          }
        }
        try (ResultSet rs = st.executeQuery("SELECT pid, application_name FROM pg_stat_activity"
            + " WHERE datname = current_database() AND pid <> pg_backend_pid()")) {
          while (rs.next()) {
            int pid = rs.getInt(1);
            s.apps.put(pid, rs.getString(2));
            long t = ticks(pid);
            if (t >= 0) {
              s.cpuTicks.put(pid, t);
            }
          }
        }
      }
      return s;
    }

    static long ticks(long pid) {
      try {
        String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]); // utime, stime
      } catch (IOException | RuntimeException e) {
        return -1;
      }
    }

    long table(String name, int field) {
      long[] v = tables.get(name);
      return v == null ? 0 : v[field];
    }

    /**
     * The WAL bytes between {@code a} and this that belong to this database: records that touch
     * its blocks, and the commit records of the transactions that wrote them (pg_walinspect reads
     * them back from the WAL files; NaN when it cannot, e.g. a checkpoint recycled the files).
     * The whole server's WAL ({@link #walBytes}) also counts every other database's.
     */
    double ownWalBytesSince(Connection c, PgSnap a) {
      try (java.sql.PreparedStatement ps = c.prepareStatement(
          "WITH r AS (SELECT xid, resource_manager, record_length, block_ref"
              + " FROM pg_get_wal_records_info(?::pg_lsn, ?::pg_lsn)),"
              + " d AS (SELECT '%/' || oid || '/%' AS pat FROM pg_database WHERE datname = current_database()),"
              + " mine AS (SELECT r.* FROM r, d WHERE r.block_ref LIKE d.pat),"
              + " x AS (SELECT DISTINCT xid FROM mine WHERE xid <> '0')"
              + " SELECT (SELECT coalesce(sum(record_length), 0) FROM mine)"
              + " + (SELECT coalesce(sum(record_length), 0) FROM r WHERE resource_manager = 'Transaction'"
              + " AND xid IN (SELECT xid FROM x))")) {
        ps.setString(1, a.lsn);
        ps.setString(2, lsn);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getDouble(1);
        }
      } catch (SQLException e) {
        System.out.println("  WAL of this database not read: " + e.getMessage());
        return Double.NaN;
      }
    }

    /** Backends' CPU between {@code a} and this, in percent of one core. */
    double cpuPercentSince(PgSnap a) {
      long ticks = 0;
      for (Map.Entry<Integer, Long> e : cpuTicks.entrySet()) {
        ticks += e.getValue() - a.cpuTicks.getOrDefault(e.getKey(), 0L);
      }
      return 100.0 * ticks / CLK_TCK / ((nanos - a.nanos) / 1e9);
    }
  }

  private static double[] percentiles(List<Double> xs) {
    if (xs.isEmpty()) {
      return new double[] {Double.NaN, Double.NaN};
    }
    double[] s = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return new double[] {s[s.length / 2], s[Math.min(s.length - 1, (int) Math.ceil(s.length * 0.99) - 1)]};
  }

  /** One run's figures, by column. */
  static final class Row {
    final String who;
    final Map<String, Double> v = new LinkedHashMap<>();

    Row(String who) {
      this.who = who;
    }
  }

  static void printRows(String title, List<Row> rows, List<String> engines, String... ratioColumns) {
    System.out.println();
    System.out.println("== " + title + " (load " + load() + ") ==");
    List<String> cols = new ArrayList<>();
    for (Row r : rows) {
      for (String k : r.v.keySet()) {
        if (!cols.contains(k)) {
          cols.add(k);
        }
      }
    }
    StringBuilder h = new StringBuilder(String.format(Locale.ROOT, "%-16s", "run"));
    for (String c : cols) {
      h.append(String.format(Locale.ROOT, " %10s", c));
    }
    System.out.println(h);
    for (Row r : rows) {
      StringBuilder s = new StringBuilder(String.format(Locale.ROOT, "%-16s", r.who));
      for (String c : cols) {
        Double x = r.v.get(c);
        s.append(x == null || x.isNaN() ? String.format(Locale.ROOT, " %10s", "-")
            : String.format(Locale.ROOT, Math.abs(x) >= 100 ? " %10.0f" : " %10.2f", x));
      }
      System.out.println(s);
    }
    if (engines.size() == 2) {
      for (String c : ratioColumns) {
        List<String> ratios = new ArrayList<>();
        for (int i = 0; i + 1 < rows.size(); i += 2) {
          Double t = rows.get(i).v.get(c);
          Double d = rows.get(i + 1).v.get(c);
          ratios.add(t == null || d == null || d == 0 ? "-" : String.format(Locale.ROOT, "%.2f", t / d));
        }
        System.out.println("ratio " + engines.get(0) + "/" + engines.get(1) + " " + c + " per round: "
            + String.join(", ", ratios));
      }
    }
    System.out.flush();
  }

  // ------------------------------------------------------------------ work

  private static void work(List<String> engines) throws Exception {
    int rounds = opt("rounds", 2);
    List<Row> rows = new ArrayList<>();
    for (int r = 0; r < rounds; r++) {
      for (String e : engines) {
        rows.add(workRun(e, r));
      }
    }
    printRows("work: K=" + opt("k", 4) + " x C=" + opt("c", 64) + ", " + opt("queued", 20000) + " queued, jobs "
        + opt("jobS", 60) + " s +-50%; " + WORK.describe(), rows, engines,
        "xact/s", "rowsW/s", "walKB/s", "pgCPU%", "probe50", "probe99");
  }

  private static Row workRun(String engine, int round) throws Exception {
    int k = opt("k", 4);
    int c = opt("c", 64);
    int queued = opt("queued", 20000);
    long jobMs = opt("jobS", 60) * 1000L;
    Row row = new Row(engine + " r" + (round + 1));
    Random rnd = new Random(42 + round);
    try (Fleet fleet = new Fleet(engine, WORK, c, opt("pool", 6)); Producer producer = new Producer(fleet);
        Connection pg = fleet.db.connect()) {
      List<String> specs = new ArrayList<>();
      for (int i = 0; i < queued; i++) {
        specs.add("q" + i + ":" + (long) (jobMs * (0.5 + rnd.nextDouble())));
      }
      producer.fill(specs);
      for (int i = 0; i < k; i++) {
        fleet.start("w" + i);
      }
      fleet.awaitReady(Duration.ofSeconds(90));
      Thread.sleep(opt("warmS", 30) * 1000L);
      Map<String, Long> sent = new ConcurrentHashMap<>();
      AtomicBoolean stop = new AtomicBoolean();
      long probeMs = 200;
      Thread probes = new Thread(() -> {
        int n = 0;
        while (!stop.get()) {
          String key = "p" + n++;
          sent.put(key, FleetChild.nowMicros());
          producer.one(key + ":" + probeMs, true);
          try {
            Thread.sleep(500);
          } catch (InterruptedException ex) {
            return;
          }
        }
      }, "fleet-probes");
      PgSnap s0 = PgSnap.take(pg);
      long t0 = FleetChild.nowMicros();
      probes.start();
      Thread.sleep(opt("windowS", 60) * 1000L);
      stop.set(true);
      probes.join();
      long t1 = FleetChild.nowMicros();
      PgSnap s1 = PgSnap.take(pg);
      double secs = (s1.nanos - s0.nanos) / 1e9;
      String main = fleet.tether() ? "tether_work_items" : "scheduled_tasks";
      row.v.put("xact/s", (s1.xacts - s0.xacts) / secs);
      row.v.put("rowsW/s", (s1.inserted + s1.updated + s1.deleted - s0.inserted - s0.updated - s0.deleted) / secs);
      row.v.put("upd/s", (s1.table(main, 1) - s0.table(main, 1)) / secs);
      row.v.put("ins/s", (s1.inserted - s0.inserted) / secs);
      long tIns = 0;
      for (String t : s1.tables.keySet()) {
        tIns += s1.table(t, 0) - s0.table(t, 0);
      }
      row.v.put("tblIns/s", tIns / secs);
      row.v.put("del/s", (s1.deleted - s0.deleted) / secs);
      row.v.put("scans/s", (s1.table(main, 4) - s0.table(main, 4)) / secs);
      row.v.put("walKB/s", s1.ownWalBytesSince(pg, s0) / 1024 / secs);
      row.v.put("srvWalKB/s", (s1.walBytes - s0.walBytes) / 1024 / secs);
      row.v.put("pgCPU%", s1.cpuPercentSince(s0));
      double done = fleet.count(Kind.DONE, "q", t0, t1);
      row.v.put("jobs/s", done / secs);
      long started = fleet.events.stream().filter(ev -> ev.kind() == Kind.START && ev.key().startsWith("q")).count();
      long finished = fleet.events.stream().filter(ev -> ev.kind() == Kind.DONE && ev.key().startsWith("q")).count();
      row.v.put("inflight", (double) (started - finished));
      row.v.put("upd/job/s", (s1.table(main, 1) - s0.table(main, 1)) / secs / Math.max(1, started - finished));
      // probes: give the last ones time to start
      Thread.sleep(5000);
      List<Double> lat = new ArrayList<>();
      for (Event ev : fleet.events) {
        Long at = ev.kind() == Kind.START ? sent.get(ev.key()) : null;
        if (at != null) {
          lat.add((ev.atMicros() - at) / 1000.0);
        }
      }
      double[] p = percentiles(lat);
      try (Statement st = pg.createStatement(); ResultSet rs = st.executeQuery(fleet.tether()
          ? "SELECT count(*), max(priority), count(*) FILTER (WHERE status = 'in_progress') FROM tether_work_items"
              + " WHERE convert_from(input_data, 'UTF8') LIKE 'p%' AND status IN ('pending', 'in_progress')"
          : "SELECT count(*), max(priority), count(*) FILTER (WHERE picked) FROM scheduled_tasks"
              + " WHERE task_instance LIKE 'p%'")) {
        rs.next();
        System.out.printf(Locale.ROOT, "  probes not finished 5 s after the window: %d (max priority %d, %d taken)%n",
            rs.getLong(1), rs.getLong(2), rs.getLong(3));
      }
      row.v.put("probes", (double) sent.size());
      row.v.put("probeRun", (double) lat.size());
      row.v.put("probe50", p[0]);
      row.v.put("probe99", p[1]);
      row.v.put("conns", (double) s1.apps.size());
    }
    System.out.println("  " + row.who + " " + row.v + " load " + load());
    return row;
  }

  // ------------------------------------------------------------------ recovery

  private static void recovery(List<String> engines) throws Exception {
    int rounds = opt("rounds", 1);
    for (String pn : opt("profiles", "default,tight").split(",")) {
      Profile profile = pn.equals("tight") ? TIGHT : DEFAULTS;
      List<Row> rows = new ArrayList<>();
      for (int r = 0; r < rounds; r++) {
        for (String e : engines) {
          rows.add(recoveryRun(e, profile, r));
        }
      }
      printRows("recovery (" + profile.name() + "): K=" + opt("k", 4) + " x C=" + opt("c", 64) + ", kill -9 of a"
          + " worker holding C jobs of " + opt("jobS", 20) + " s; " + profile.describe(), rows, engines,
          "firstS", "lastS");
    }
  }

  private static Row recoveryRun(String engine, Profile profile, int round) throws Exception {
    int k = opt("k", 4);
    int c = opt("c", 64);
    long jobMs = opt("jobS", 20) * 1000L;
    Row row = new Row(engine + " r" + (round + 1));
    try (Fleet fleet = new Fleet(engine, profile, c, opt("pool", 6)); Producer producer = new Producer(fleet);
        Connection pg = fleet.db.connect()) {
      List<String> specs = new ArrayList<>();
      for (int i = 0; i < c; i++) {
        specs.add("r" + i + ":" + jobMs);
      }
      producer.fill(specs);
      Child victim = fleet.start("w0");
      await("the victim running all " + c + " jobs", Duration.ofSeconds(120),
          () -> fleet.count(Kind.START, "r", 0, Long.MAX_VALUE) >= c);
      for (int i = 1; i < k; i++) {
        fleet.start("w" + i);
      }
      fleet.awaitReady(Duration.ofSeconds(90));
      Thread.sleep(2000);
      if (fleet.count(Kind.DONE, "r", 0, Long.MAX_VALUE) > 0) {
        throw new IllegalStateException("jobs finished before the kill: make jobS longer");
      }
      long kill = fleet.kill9(victim);
      long limit = Long.parseLong(fleet.tether() ? profile.tether().get("visibilityMs")
          : Long.toString(Long.parseLong(profile.dbs().get("heartbeatMs")) * Long.parseLong(profile.dbs().get("missed"))));
      await("every killed job to complete elsewhere", Duration.ofMillis(3 * limit + jobMs + 120_000),
          () -> fleet.count(Kind.DONE, "r", 0, Long.MAX_VALUE) >= c);
      Thread.sleep(3000); // a duplicate would show now
      RecoveryAccount.Result res = RecoveryAccount.account(victim.name, kill, fleet.events);
      row.v.put("held", (double) res.held());
      row.v.put("restarted", (double) res.restarted());
      row.v.put("firstS", res.firstMs() / 1000);
      row.v.put("lastS", res.lastMs() / 1000);
      row.v.put("breaches", (double) res.violations().size());
      for (String v : res.violations().subList(0, Math.min(5, res.violations().size()))) {
        System.out.println("  breach: " + v);
      }
      try (Statement st = pg.createStatement(); ResultSet rs = st.executeQuery(fleet.tether()
          ? "SELECT count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE delivery_count = 2),"
              + " count(*) FROM tether_work_items"
          : "SELECT 0, 0, count(*) FROM scheduled_tasks")) {
        rs.next();
        row.v.put("dbDone", (double) rs.getLong(1));
        row.v.put("dbDeliv2", (double) rs.getLong(2));
        row.v.put("dbRows", (double) rs.getLong(3));
      }
    }
    System.out.println("  " + row.who + " " + row.v + " load " + load());
    return row;
  }

  // ------------------------------------------------------------------ idle

  private static void idle(List<String> engines) throws Exception {
    int rounds = opt("rounds", 1);
    List<Row> rows = new ArrayList<>();
    for (int r = 0; r < rounds; r++) {
      for (String e : engines) {
        rows.add(idleRun(e, r));
      }
    }
    printRows("idle: K'=" + opt("k", 16) + " x C=" + opt("c", 8) + ", pool " + opt("pool", 2) + " each; wake/quiet: in the first "
        + opt("burstMs", 250) + " ms after one enqueue / of a quiet second; acq1s/quiet1s: in the whole second; "
        + WORK.describe(), rows, engines, "xact/s/p", "scans/s/p", "wakeProc", "wakeAcq");
  }

  /** A backend's last statement, as pg_stat_activity shows it. */
  record Activity(int pid, String app, long startMicros, String query) {}

  private static List<Activity> activity(Connection pg) throws SQLException {
    List<Activity> out = new ArrayList<>();
    try (Statement st = pg.createStatement(); ResultSet rs = st.executeQuery(
        "SELECT pid, application_name, (extract(epoch FROM query_start) * 1000000)::bigint, query"
            + " FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            + " AND query_start IS NOT NULL")) {
      while (rs.next()) {
        out.add(new Activity(rs.getInt(1), rs.getString(2), rs.getLong(3), rs.getString(4)));
      }
    }
    return out;
  }

  /**
   * A statement's kind: its first words, marked {@code ACQ} when it takes items: db-scheduler's
   * lock-and-fetch ({@code SKIP LOCKED}), Tether's one-statement acquisition (its text starts
   * {@code WITH t AS} and has a {@code pick} step; pg_stat_activity cuts it at 1 kB, before its
   * {@code SKIP LOCKED}; Tether's single enqueue starts {@code WITH t AS} too, without one).
   */
  static String kind(String query) {
    String q = query.replaceAll("\\s+", " ").trim();
    boolean acquire = (q.contains("SKIP LOCKED") && !q.contains("scheduled = FALSE"))
        || (q.startsWith("WITH t AS") && q.contains(" pick AS ("));
    return (acquire ? "ACQ " : "") + q.substring(0, Math.min(48, q.length()));
  }

  /** A statement seen in pg_stat_activity: when it started (after the window's start), by whom, its kind. */
  record Seen(double offsetMs, String app, String kind) {
    boolean acquisition() {
      return kind.startsWith("ACQ ");
    }
  }

  /**
   * Watches pg_stat_activity for {@code millis}: every statement started in the window (a
   * backend's query_start that moved). Sampling every few milliseconds misses a backend's
   * statement only when it runs two within one sample.
   */
  private static List<Seen> watch(Connection pg, long fromMicros, long millis) throws Exception {
    List<Seen> out = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    while (System.nanoTime() < end) {
      for (Activity a : activity(pg)) {
        if (a.startMicros() >= fromMicros && seen.add(a.pid() + "@" + a.startMicros())) {
          out.add(new Seen((a.startMicros() - fromMicros) / 1000.0, a.app(), kind(a.query())));
        }
      }
      Thread.sleep(5);
    }
    return out;
  }

  /** Acquisitions started within {@code ms} of the window's start. */
  static long acquisitions(List<Seen> seen, double ms) {
    return seen.stream().filter(x -> x.acquisition() && x.offsetMs() < ms).count();
  }

  /** Processes that ran an acquisition within {@code ms} of the window's start. */
  static long processes(List<Seen> seen, double ms) {
    return seen.stream().filter(x -> x.acquisition() && x.offsetMs() < ms).map(Seen::app).distinct().count();
  }

  private static Row idleRun(String engine, int round) throws Exception {
    int k = opt("k", 16);
    int c = opt("c", 8);
    Row row = new Row(engine + " r" + (round + 1));
    try (Fleet fleet = new Fleet(engine, WORK, c, opt("pool", 2)); Producer producer = new Producer(fleet);
        Connection pg = fleet.db.connect()) {
      for (int i = 0; i < k; i++) {
        fleet.start("w" + i);
      }
      fleet.awaitReady(Duration.ofSeconds(120));
      Thread.sleep(opt("settleS", 15) * 1000L);
      PgSnap s0 = PgSnap.take(pg);
      Thread.sleep(opt("windowS", 60) * 1000L);
      PgSnap s1 = PgSnap.take(pg);
      double secs = (s1.nanos - s0.nanos) / 1e9;
      String main = fleet.tether() ? "tether_work_items" : "scheduled_tasks";
      row.v.put("xact/s", (s1.xacts - s0.xacts) / secs);
      row.v.put("xact/s/p", (s1.xacts - s0.xacts) / secs / k);
      row.v.put("scans/s/p", (s1.table(main, 4) - s0.table(main, 4)) / secs / k);
      row.v.put("walKB/s", s1.ownWalBytesSince(pg, s0) / 1024 / secs);
      row.v.put("pgCPU%", s1.cpuPercentSince(s0));
      row.v.put("conns", (double) s1.apps.size());
      // statements in a quiet window, then around one enqueue, repeated
      int wakes = opt("wakes", 5);
      double burst = opt("burstMs", 250);
      double quietAcq = 0;
      double quietProc = 0;
      double quietAcq1s = 0;
      double wakeAcq = 0;
      double wakeProc = 0;
      double wakeAcq1s = 0;
      List<Double> lat = new ArrayList<>();
      Map<String, Integer> wakeKinds = new TreeMap<>();
      for (int i = 0; i < wakes; i++) {
        List<Seen> quiet = watch(pg, FleetChild.nowMicros(), 1000);
        quietAcq += acquisitions(quiet, burst);
        quietProc += processes(quiet, burst);
        quietAcq1s += acquisitions(quiet, 1000);
        long at = FleetChild.nowMicros();
        String key = "e" + i;
        producer.one(key + ":0", false);
        List<Seen> woke = watch(pg, at, 1000);
        wakeAcq += acquisitions(woke, burst);
        wakeProc += processes(woke, burst);
        wakeAcq1s += acquisitions(woke, 1000);
        for (Seen x : woke) {
          wakeKinds.merge(x.kind(), 1, Integer::sum);
        }
        await("item " + key + " started", Duration.ofSeconds(30),
            () -> fleet.count(Kind.START, key, 0, Long.MAX_VALUE) > 0);
        for (Event ev : fleet.events) {
          if (ev.kind() == Kind.START && ev.key().equals(key)) {
            lat.add((ev.atMicros() - at) / 1000.0);
          }
        }
        Thread.sleep(2000);
      }
      // per enqueue: acquisitions and processes in the first burstMs after it, and in the same
      // length of a quiet window (the idle polling any window has); and over the whole second
      row.v.put("wakeAcq", wakeAcq / wakes);
      row.v.put("quietAcq", quietAcq / wakes);
      row.v.put("wakeProc", wakeProc / wakes);
      row.v.put("quietProc", quietProc / wakes);
      row.v.put("acq1s", wakeAcq1s / wakes);
      row.v.put("quiet1s", quietAcq1s / wakes);
      row.v.put("startMs", percentiles(lat)[0]);
      System.out.println("  statements in the second after an enqueue, by kind (sum over " + wakes + " enqueues):");
      wakeKinds.forEach((kd, n) -> System.out.println("    " + n + "  " + kd));
    }
    System.out.println("  " + row.who + " " + row.v + " load " + load());
    return row;
  }

  // ------------------------------------------------------------------ soak

  private static void soak(List<String> engines) throws Exception {
    for (String e : engines) {
      soakRun(e);
    }
  }

  private static long procStatus(long pid, String field) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
        if (line.startsWith(field + ":")) {
          return Long.parseLong(line.substring(field.length() + 1).trim().split("\\s+")[0]);
        }
      }
    } catch (IOException | RuntimeException e) {
      // gone
    }
    return -1;
  }

  private static void soakRun(String engine) throws Exception {
    int k = opt("k", 4);
    int c = opt("c", 16);
    int minutes = opt("minutes", 30);
    int rate = opt("rate", 20);
    long killEveryMs = opt("killEveryS", 180) * 1000L;
    boolean vacuum = Boolean.parseBoolean(opt("vacuum", "true"));
    Random rnd = new Random(7);
    List<String> table = new ArrayList<>();
    String header = String.format(Locale.ROOT, "%4s %6s %6s %5s %-27s %-23s %-15s %5s %8s %8s %8s %8s %7s",
        "min", "done/m", "kills", "conns", "heapMB after GC (each)", "rssMB (each)", "threads (each)", "pend",
        "itemsKB", "ckptKB", "itemDead", "ckptDead", "itemLive");
    try (Fleet fleet = new Fleet(engine, WORK, c, opt("pool", 4)); Producer producer = new Producer(fleet);
        Connection pg = fleet.db.connect()) {
      fleet.extra.put("memoryMs", "60000");
      if (fleet.tether()) {
        fleet.extra.put("retentionMs", "60000");
        fleet.extra.put("checkpointMs", "10000");
      }
      int gen = 0;
      for (int i = 0; i < k; i++) {
        fleet.start("w" + i + "g" + gen);
      }
      fleet.awaitReady(Duration.ofSeconds(90));
      AtomicBoolean stop = new AtomicBoolean();
      int[] seq = {0};
      Thread feeder = new Thread(() -> {
        Random r = new Random(11);
        while (!stop.get()) {
          try {
            if (producer.pending() < 2L * k * c) {
              List<String> specs = new ArrayList<>();
              for (int i = 0; i < rate; i++) {
                long ms = r.nextInt(10) == 0 ? 30_000 + r.nextInt(90_000) : 200 + r.nextInt(1800);
                specs.add("s" + seq[0]++ + ":" + ms);
              }
              producer.fill(specs);
            }
            Thread.sleep(1000);
          } catch (InterruptedException e) {
            return;
          } catch (Exception e) {
            System.out.println("  feeder: " + e);
          }
        }
      }, "fleet-feeder");
      feeder.start();
      long start = System.nanoTime();
      long nextKill = killEveryMs / 2 + rnd.nextInt((int) killEveryMs);
      int kills = 0;
      long lastSample = FleetChild.nowMicros();
      System.out.println(header);
      for (int m = 1; m <= minutes; m++) {
        long minuteEnd = start + TimeUnit.MINUTES.toNanos(m);
        while (System.nanoTime() < minuteEnd) {
          long elapsedMs = (System.nanoTime() - start) / 1_000_000;
          if (elapsedMs >= nextKill) {
            Child victim = fleet.children.get(rnd.nextInt(fleet.children.size()));
            fleet.kill9(victim);
            kills++;
            gen++;
            fleet.start(victim.name.substring(0, victim.name.indexOf('g')) + "g" + gen);
            nextKill = elapsedMs + killEveryMs / 2 + rnd.nextInt((int) killEveryMs);
          }
          Thread.sleep(Math.min(1000, Math.max(1, (minuteEnd - System.nanoTime()) / 1_000_000)));
        }
        long now = FleetChild.nowMicros();
        long done = fleet.count(Kind.DONE, "s", lastSample, now);
        lastSample = now;
        PgSnap s = PgSnap.take(pg);
        List<String> heap = new ArrayList<>();
        List<String> rss = new ArrayList<>();
        List<String> thr = new ArrayList<>();
        for (Child ch : fleet.children) {
          heap.add(ch.heapAfterGc < 0 ? "-" : String.format(Locale.ROOT, "%.1f", ch.heapAfterGc / 1048576.0));
          rss.add(Long.toString(procStatus(ch.pid(), "VmRSS") / 1024));
          thr.add(Long.toString(procStatus(ch.pid(), "Threads")));
        }
        String main = fleet.tether() ? "tether_work_items" : "scheduled_tasks";
        String ckpt = "tether_work_item_checkpoints";
        String line = String.format(Locale.ROOT, "%4d %6d %6d %5d %-27s %-23s %-15s %5d %8d %8d %8d %8d %7d", m, done,
            kills, s.apps.size(), String.join("/", heap), String.join("/", rss), String.join("/", thr),
            producer.pending(), s.table(main, 7) / 1024, s.table(ckpt, 7) / 1024, s.table(main, 6),
            s.table(ckpt, 6), s.table(main, 5));
        table.add(line);
        System.out.println(line);
        if (vacuum) {
          // The shared server runs with autovacuum off; a production server vacuums on its own.
          try (Statement st = pg.createStatement()) {
            st.execute("VACUUM " + main);
            if (fleet.tether()) {
              st.execute("VACUUM " + ckpt);
            }
          }
        }
      }
      stop.set(true);
      feeder.join();
      // completions per key: at-least-once delivery, exactly-once completion
      Map<String, Integer> dones = new HashMap<>();
      for (Event ev : fleet.events) {
        if (ev.kind() == Kind.DONE) {
          dones.merge(ev.key(), 1, Integer::sum);
        }
      }
      long twice = dones.values().stream().filter(n -> n > 1).count();
      System.out.println();
      System.out.println("== soak " + engine + ": K=" + k + " x C=" + c + ", " + minutes + " min, ~" + rate
          + " items/s offered (9 in 10 of 0.2-2 s, 1 in 10 of 30-120 s), kill -9 every ~" + killEveryMs / 1000
          + " s, retention 60 s (Tether), VACUUM each minute: " + vacuum + "; " + WORK.describe() + " ==");
      System.out.println(header);
      table.forEach(System.out::println);
      System.out.println("items completed: " + dones.size() + ", completed more than once: " + twice
          + ", kills: " + kills + ", load " + load());
    }
  }
}
