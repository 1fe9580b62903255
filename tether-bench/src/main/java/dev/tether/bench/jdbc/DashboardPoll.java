package dev.tether.bench.jdbc;

import com.sun.net.httpserver.HttpServer;
import dev.tether.dashboard.TetherDashboard;
import dev.tether.jdbc.OverviewQueries;
import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import dev.tether.jdbc.WorkerInfo;
import dev.tether.jdbc.WorkerRegistry;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The dashboard's poll on a large store: fills {@code items} items (default 1,000,000) with one
 * bulk {@code INSERT ... SELECT} (four queues; 90% completed, 4% failed, 1% cancelled, 4%
 * pending of which a quarter scheduled, 0.1% in progress; finished over the last 50 minutes, so
 * the throughput chart's window holds some 600,000; a lease-expired checkpoint for 1% of the
 * items; a few 66 KB commands among the newest), registers 5 workers, runs {@code ANALYZE}, then
 * serves {@link TetherDashboard} on a JDK server on 127.0.0.1 and times the page's requests
 * over HTTP (wall time from request to last byte, median and p95, and body bytes): the first page
 * as filled, then (PostgreSQL: after {@code VACUUM ANALYZE}, as autovacuum leaves a live store)
 * the first page, a status filter, the in-progress items (from the leased indexes, sorted), a queue
 * + status filter deep in the keyset, a text search, and
 * the throughput chart's read (uncached). For comparison it times the exact whole-store count ({@link
 * QueueMonitor#countsByStatus()}, what the old {@code /api/state} ran on every poll). Measured,
 * never asserted.
 *
 * <p>Run: {@code java -cp tether-bench/target/benchmarks.jar dev.tether.bench.jdbc.DashboardPoll
 * [sqlite|postgres|both] [items] [polls]}; defaults both, 1000000, 200. PostgreSQL from {@code
 * TETHER_TEST_PG_URL} (default {@code jdbc:postgresql://127.0.0.1:5432/test?user=postgres}), a
 * fresh schema dropped after, pool of 2; SQLite a temp file, deleted after.
 */
public final class DashboardPoll {
  private DashboardPoll() {}

  /** With a fourth argument {@code keep}: the PostgreSQL schema is left for a look with psql. */
  private static boolean keep;

  public static void main(String[] args) throws Exception {
    // as the CLI does: without it the JDK server's two writes per answer meet the client's delayed
    // ACK and every answer waits ~40 ms (measured: 48 ms per poll of a 20,000-item store, 5 ms with)
    System.setProperty("sun.net.httpserver.nodelay", "true");
    String which = args.length > 0 ? args[0] : "both";
    int items = args.length > 1 ? Integer.parseInt(args[1]) : 1_000_000;
    int polls = args.length > 2 ? Integer.parseInt(args[2]) : 200;
    keep = args.length > 3 && args[3].equals("keep");
    for (String engine : List.of("sqlite", "postgres")) {
      if (which.equals("both") || which.equals(engine)) {
        run(engine, items, polls);
      }
    }
  }

  private static void run(String engine, int items, int polls) throws Exception {
    BenchSchema pg = null;
    Path dir = null;
    String url;
    if (engine.equals("postgres")) {
      pg = BenchSchema.create("tether_dashpoll_");
      url = pg.url();
    } else {
      dir = Files.createTempDirectory("tether-dashpoll");
      url = dir.resolve("bench.db").toString();
    }
    HttpServer server = null;
    try (TetherStore store = TetherStore.open(url, TetherStoreConfig.builder().maximumPoolSize(2).build())) {
      long t0 = System.nanoTime();
      long maxId = fill(store, engine, url, items);
      System.out.printf(Locale.ROOT, "%s: filled %,d items in %.1f s%n", engine, maxId, (System.nanoTime() - t0) / 1e9);
      WorkerRegistry registry = new WorkerRegistry(store);
      for (int i = 1; i <= 5; i++) {
        registry.register(WorkerInfo.Registration.ofThisProcess("bench-" + i, "bench", List.of("builds"), 4, 4),
            Duration.ofSeconds(10));
      }
      server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
      server.createContext("/", TetherDashboard.builder(store).token("t").build());
      server.start();
      String base = "http://127.0.0.1:" + server.getAddress().getPort() + "/";
      HttpClient http = HttpClient.newHttpClient();
      String[][] cases = {
        {"first page", "api/state"},
        {"status=failed", "api/state?status=failed"},
        {"status=in_progress (1,000 leases, sorted)", "api/state?status=in_progress"},
        {"queue+status, deep", "api/state?queue=mail&status=completed&before=" + (maxId / 2)},
        {"text search", "api/state?q=" + java.net.URLEncoder.encode("job 77777", java.nio.charset.StandardCharsets.UTF_8)},
      };
      // right after the bulk fill only ANALYZE has run: on PostgreSQL no page is all-visible yet,
      // so every index entry a count reads costs a heap visit (a live store's autovacuum sets
      // the visibility map; CI runs without it)
      poll(http, engine, "first page, before VACUUM", base + cases[0][1], polls);
      if (engine.equals("postgres")) {
        try (Connection c = DriverManager.getConnection(url); Statement st = c.createStatement()) {
          st.execute("VACUUM ANALYZE tether_work_items");
          st.execute("VACUUM ANALYZE tether_work_item_checkpoints");
        }
      }
      for (String[] c : cases) {
        poll(http, engine, c[0], base + c[1], polls);
      }
      OverviewQueries overview = new OverviewQueries(store);
      long[] tp = new long[Math.max(5, polls / 10)];
      for (int i = 0; i < 3; i++) {
        overview.throughput(30, 10_000);
      }
      for (int i = 0; i < tp.length; i++) {
        long s = System.nanoTime();
        overview.throughput(30, 10_000);
        tp[i] = System.nanoTime() - s;
      }
      report(engine, "throughput (30 min, 10,000 rows/series, uncached)", tp, -1);
      QueueMonitor monitor = new QueueMonitor(store);
      long[] full = new long[3];
      for (int i = 0; i < full.length; i++) {
        long s = System.nanoTime();
        monitor.countsByStatus();
        full[i] = System.nanoTime() - s;
      }
      report(engine, "exact counts by queue and status (old poll's full scan), for comparison", full, -1);
    } finally {
      if (server != null) {
        server.stop(0);
      }
      if (pg != null && keep) {
        System.out.println("kept schema " + pg.name());
      } else if (pg != null) {
        pg.close();
      }
      if (dir != null) {
        for (String f : new String[] {"bench.db", "bench.db-wal", "bench.db-shm"}) {
          Files.deleteIfExists(dir.resolve(f));
        }
        Files.deleteIfExists(dir);
      }
    }
  }

  private static void poll(HttpClient http, String engine, String name, String url, int polls) throws Exception {
    HttpRequest req = HttpRequest.newBuilder(URI.create(url)).header("X-Tether-Token", "t").build();
    for (int i = 0; i < 20; i++) {
      check(http.send(req, HttpResponse.BodyHandlers.ofByteArray()), url);
    }
    long[] t = new long[polls];
    int bytes = 0;
    for (int i = 0; i < polls; i++) {
      long s = System.nanoTime();
      HttpResponse<byte[]> r = http.send(req, HttpResponse.BodyHandlers.ofByteArray());
      t[i] = System.nanoTime() - s;
      check(r, url);
      bytes = Math.max(bytes, r.body().length);
    }
    report(engine, name, t, bytes);
  }

  private static void check(HttpResponse<byte[]> r, String url) {
    if (r.statusCode() != 200) {
      throw new IllegalStateException(url + " answered " + r.statusCode() + ": " + new String(r.body()));
    }
  }

  private static void report(String engine, String name, long[] nanos, int bytes) {
    long[] s = nanos.clone();
    Arrays.sort(s);
    double median = s[s.length / 2] / 1e6;
    double p95 = s[Math.min(s.length - 1, (int) Math.ceil(s.length * 0.95) - 1)] / 1e6;
    System.out.printf(Locale.ROOT, "%s: %-70s median %7.2f ms  p95 %7.2f ms%s  (n=%d)%n", engine, name, median, p95,
        bytes < 0 ? "" : String.format(Locale.ROOT, "  %,d bytes", bytes), s.length);
  }

  /** Fills the store with one bulk insert per table; returns the highest id. */
  private static long fill(TetherStore store, String engine, String url, int n) throws Exception {
    boolean pg = engine.equals("postgres");
    long now = System.currentTimeMillis();
    // x from 1 to n; item x finished (x - n) * 3 ms from now: the newest just now, the oldest 50 min ago
    String ts = pg ? "to_timestamp((? - (? - x) * 3) / 1000.0)" : "(? - (? - x) * 3)";
    String blob = pg ? "convert_to('{\"argv\":[\"echo job ' || x || '\"],\"shell\":true}', 'UTF8')"
        : "CAST('{\"argv\":[\"echo job ' || x || '\"],\"shell\":true}' AS BLOB)";
    String status = "CASE WHEN x % 1000 = 999 THEN 'in_progress' WHEN x % 100 < 90 THEN 'completed'"
        + " WHEN x % 100 < 94 THEN 'failed' WHEN x % 100 = 94 THEN 'cancelled' ELSE 'pending' END";
    String finished = "CASE WHEN x % 1000 = 999 THEN NULL WHEN x % 100 < 95 THEN " + ts + " ELSE NULL END";
    String later = pg ? "to_timestamp((? + 3600000) / 1000.0)" : "(? + 3600000)";
    String columns = "queue, status, priority, lease_holder, lease_token, lease_expires_at, heartbeat_at,"
        + " delivery_count, attempts, max_attempts, available_at, input_data, error_message, created_at,"
        + " started_at, completed_at, updated_at, scheduled";
    String select = "SELECT CASE x % 4 WHEN 0 THEN 'builds' WHEN 1 THEN 'mail' WHEN 2 THEN 'reports' ELSE 'agents' END,"
        + " " + status + ", 0,"
        + " CASE WHEN x % 1000 = 999 THEN 'bench/w1' END, CASE WHEN x % 1000 = 999 THEN x END,"
        + " CASE WHEN x % 1000 = 999 THEN " + later + " END, CASE WHEN x % 1000 = 999 THEN " + ts + " END,"
        + " CASE WHEN x % 100 < 95 OR x % 1000 = 999 THEN 1 ELSE 0 END,"
        + " CASE WHEN x % 100 < 95 OR x % 1000 = 999 THEN 1 ELSE 0 END, 3,"
        + " CASE WHEN x % 100 = 98 THEN " + later + " ELSE " + ts + " END, " + blob + ","
        + " CASE WHEN x % 100 BETWEEN 90 AND 93 THEN 'failed on attempt 1 of 1: exit status 1' END,"
        + " " + ts + ", " + finished + ", " + finished + ", " + ts + ","
        + " CASE WHEN x % 100 = 98 THEN TRUE ELSE FALSE END";
    String sql = pg
        ? "INSERT INTO tether_work_items (" + columns + ") " + select + " FROM generate_series(1, ?) AS g(x)"
        : "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < ?) INSERT INTO tether_work_items ("
            + columns + ") " + select + " FROM g";
    try (Connection c = DriverManager.getConnection(pg ? url : "jdbc:sqlite:" + url)) {
      // parameters: every ts (now, n) pair and every later (now), in order of appearance
      List<Object> params = new ArrayList<>();
      if (!pg) {
        params.add(n); // the recursive CTE's bound comes first
      }
      scan(select, params, now, n);
      if (pg) {
        params.add(n);
      }
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        for (int i = 0; i < params.size(); i++) {
          Object p = params.get(i);
          if (p instanceof Long l) {
            ps.setLong(i + 1, l);
          } else {
            ps.setInt(i + 1, (Integer) p);
          }
        }
        ps.executeUpdate();
      }
      String big = "x".repeat(66_000);
      try (PreparedStatement ps = c.prepareStatement("UPDATE tether_work_items SET input_data = ? WHERE id IN"
          + " (SELECT id FROM tether_work_items ORDER BY id DESC LIMIT 3)")) {
        ps.setBytes(1, ("{\"argv\":[\"echo " + big + "\"],\"shell\":true}").getBytes(java.nio.charset.StandardCharsets.UTF_8));
        ps.executeUpdate();
      }
      try (Statement st = c.createStatement()) {
        st.executeUpdate("INSERT INTO tether_work_item_checkpoints (item_id, kind, lease_holder, lease_token,"
            + " delivery_count, heartbeat_at, reason, created_at) SELECT id, 'lease_expired', 'bench/w2', 1, 1,"
            + " created_at, 'lease expired', created_at FROM tether_work_items WHERE id % 100 = 0");
        st.execute("ANALYZE");
      }
      try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT MAX(id) FROM tether_work_items")) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** Adds the parameters of {@code select}'s placeholders: {@code ts} takes (now, n), {@code later} (now). */
  private static void scan(String select, List<Object> params, long now, int n) {
    for (int i = 0; i < select.length(); i++) {
      if (select.charAt(i) != '?') {
        continue;
      }
      // "? - (? - x)": now then n; "? + 3600000": now
      boolean secondOfTs = select.startsWith("? - x)", i);
      params.add(secondOfTs ? (Object) n : (Object) now);
    }
  }
}
