package dev.tether.bench.jdbc;

import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import dev.tether.loop.LoopGroup;
import dev.tether.loop.MainLoop;
import dev.tether.loop.WorkContext;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/**
 * What an idle fleet costs PostgreSQL, and how many processes one enqueue wakes: starts {@code N}
 * child JVMs, each a {@link LoopGroup} of 8 {@link MainLoop}s receiving from one {@link
 * JdbcMailbox} (as {@code tether worker --concurrency 8} does, with its pool capped so the fleet
 * stays within a modest number of connections), on a database of its own. Then
 *
 * <ol>
 *   <li>idle: transactions per second per process ({@code pg_stat_database.xact_commit}) and
 *       scans of {@code tether_work_items} per second per process ({@code pg_stat_user_tables}:
 *       each acquisition look is one);
 *   <li>herd: items enqueued one at a time, {@code gap} apart, by a store of the harness's own
 *       (which does not receive): the extra scans per enqueue beyond the idle rate (one is the
 *       completion's), and how many processes ran a statement on a pooled connection (an acquisition,
 *       its completion, a pool's validation: anything but the listener's own statements) within
 *       300 ms of each enqueue ({@code pg_stat_activity}, by application name), beside the
 *       same count in a 300 ms window without an enqueue.
 * </ol>
 *
 * Measured, never asserted. Run: {@code java -cp tether-bench/target/benchmarks.jar
 * dev.tether.bench.jdbc.IdleFleet [processes] [idleSeconds] [enqueues] [poolSize]}; defaults 8, 30,
 * 20, 2 (8 processes hold 8 x (2 + 1 listener) connections). PostgreSQL from {@code
 * TETHER_TEST_PG_URL}; the database is created for the run and dropped after. The stores use the
 * wake-up roster ({@code TetherStoreConfig.wakeRoster}) unless {@code -Dfleet.wakeRoster=false}
 * (the default configuration: every listening process hears every enqueue); the children inherit
 * the property.
 */
public final class IdleFleet {
  /** Whether the stores use the wake-up roster ({@code -Dfleet.wakeRoster}, default true). */
  private static final boolean ROSTER = !"false".equals(System.getProperty("fleet.wakeRoster"));
  private IdleFleet() {}

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("child")) {
      child(args[1], Integer.parseInt(args[2]));
      return;
    }
    int processes = args.length > 0 ? Integer.parseInt(args[0]) : 8;
    int idleSeconds = args.length > 1 ? Integer.parseInt(args[1]) : 30;
    int enqueues = args.length > 2 ? Integer.parseInt(args[2]) : 20;
    int poolSize = args.length > 3 ? Integer.parseInt(args[3]) : 2;
    String base = BenchSchema.baseUrl();
    String db = "tether_wakefleet_" + UUID.randomUUID().toString().substring(0, 8);
    try (Connection admin = DriverManager.getConnection(base); Statement st = admin.createStatement()) {
      st.execute("CREATE DATABASE " + db);
    }
    String url = base.replaceFirst("(jdbc:postgresql://[^/]+/)[^?]*", "$1" + db);
    List<Process> children = new ArrayList<>();
    try {
      run(url, db, processes, idleSeconds, enqueues, poolSize, children);
    } catch (Exception e) {
      e.printStackTrace();
      throw e;
    } finally {
      for (Process p : children) {
        p.getOutputStream().close(); // the child shuts down when its stdin ends
      }
      for (Process p : children) {
        if (!p.waitFor(20, java.util.concurrent.TimeUnit.SECONDS)) {
          p.destroyForcibly();
        }
      }
      try (Connection admin = DriverManager.getConnection(base); Statement st = admin.createStatement()) {
        st.execute("DROP DATABASE IF EXISTS " + db + " WITH (FORCE)");
      }
    }
  }

  private static void run(String url, String db, int processes, int idleSeconds, int enqueues,
      int poolSize, List<Process> children) throws Exception {
    try (TetherStore producer = TetherStore.open(url + "&ApplicationName=fleet-producer",
        TetherStoreConfig.builder().maximumPoolSize(1).wakeRoster(ROSTER).build())) {
      LeaseManager leases = new LeaseManager(producer, "fleet-producer");
      String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
      for (int i = 0; i < processes; i++) {
        ProcessBuilder pb = new ProcessBuilder(java, "-Xmx128m", "-Dfleet.wakeRoster=" + ROSTER, "-cp", System.getProperty("java.class.path"),
            IdleFleet.class.getName(), "child", url + "&ApplicationName=fleet-" + i, Integer.toString(poolSize));
        pb.redirectError(ProcessBuilder.Redirect.DISCARD);
        children.add(pb.start());
      }
      for (Process p : children) {
        BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line;
        while ((line = r.readLine()) != null && !line.equals("ready")) {
          // skip
        }
        if (line == null) {
          throw new IllegalStateException("a child ended before it was ready");
        }
      }
      Thread.sleep(5000); // every loop waiting in receive
      try (Connection c = DriverManager.getConnection(url + "&ApplicationName=fleet-stats")) {
        long[] a = counters(c, db);
        long t0 = System.nanoTime();
        Thread.sleep(idleSeconds * 1000L);
        long[] b = counters(c, db);
        double secs = (System.nanoTime() - t0) / 1e9;
        double idleTx = (b[0] - a[0] - 2) / secs; // minus the harness's own two reads
        double idleScans = (b[1] - a[1]) / secs;
        System.out.printf(Locale.ROOT, "idle fleet: %d processes x 8 loops, %.0f s: %.2f transactions/s and"
                + " %.2f scans of tether_work_items/s per process (fleet: %.1f tx/s, %.1f scans/s)%n",
            processes, secs, idleTx / processes, idleScans / processes, idleTx, idleScans);

        long[] h0 = counters(c, db);
        long t1 = System.nanoTime();
        int wokenTotal = 0;
        int maxWoken = 0;
        int controlTotal = 0;
        for (int i = 0; i < enqueues; i++) {
          Timestamp quiet = dbNow(c);
          Thread.sleep(300);
          controlTotal += woken(c, quiet);
          Timestamp before = dbNow(c);
          leases.enqueue(NewWorkItem.of("idle", "herd-" + i));
          Thread.sleep(300);
          int woken = woken(c, before);
          wokenTotal += woken;
          maxWoken = Math.max(maxWoken, woken);
          Thread.sleep(2400);
        }
        long[] h1 = counters(c, db);
        double hsecs = (System.nanoTime() - t1) / 1e9;
        double extraScans = (h1[1] - h0[1]) - idleScans * hsecs;
        System.out.printf(Locale.ROOT, "herd: %d single enqueues %.1f s apart: %.1f scans of tether_work_items per"
                + " enqueue beyond the idle rate (the completion is one); processes running"
                + " a statement on a pooled connection within 300 ms of an enqueue: %.1f on average, %d at most"
                + " (in 300 ms without an enqueue: %.1f on average)%n",
            enqueues, hsecs / enqueues, extraScans / enqueues, wokenTotal / (double) enqueues, maxWoken,
            controlTotal / (double) enqueues);
        try (Statement st = c.createStatement();
            ResultSet rs = st.executeQuery("SELECT count(*) FILTER (WHERE status = 'completed'), count(*)"
                + " FROM tether_work_items")) {
          rs.next();
          System.out.printf(Locale.ROOT, "items completed: %d of %d%n", rs.getLong(1), rs.getLong(2));
        }
      }
    }
  }

  private static long[] counters(Connection c, String db) throws Exception {
    try (Statement st = c.createStatement()) {
      // the statistics of other backends reach the shared counters within about a second
      Thread.sleep(1200);
      long tx;
      try (ResultSet rs = st.executeQuery("SELECT xact_commit FROM pg_stat_database WHERE datname = '" + db + "'")) {
        rs.next();
        tx = rs.getLong(1);
      }
      long scans;
      try (ResultSet rs = st.executeQuery("SELECT coalesce(idx_scan, 0) + coalesce(seq_scan, 0)"
          + " FROM pg_stat_user_tables WHERE relname = 'tether_work_items'")) {
        rs.next();
        scans = rs.getLong(1);
      }
      return new long[] {tx, scans};
    }
  }

  private static Timestamp dbNow(Connection c) throws Exception {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT clock_timestamp()")) {
      rs.next();
      return rs.getTimestamp(1);
    }
  }

  private static int woken(Connection c, Timestamp since) throws Exception {
    try (java.sql.PreparedStatement ps = c.prepareStatement("SELECT count(DISTINCT application_name)"
        + " FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'fleet-%'"
        + " AND application_name NOT IN ('fleet-producer', 'fleet-stats')"
        + " AND query_start > ? AND query NOT ILIKE 'LISTEN%' AND query NOT ILIKE '%AS q(name)%'")) {
      ps.setTimestamp(1, since);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  private static void child(String url, int poolSize) throws Exception {
    try (TetherStore store = TetherStore.open(url, TetherStoreConfig.builder().maximumPoolSize(poolSize).wakeRoster(ROSTER).build())) {
      JdbcMailbox<String, String> box = JdbcMailbox.ofStrings(store, "idle");
      List<MainLoop<String, String>> loops = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        loops.add(MainLoop.builder("idle-" + i, box, (String body, WorkContext ctx) -> body).build());
      }
      LoopGroup group = LoopGroup.builder().loops(loops).noHealthServer().handleSignals(false).build();
      Thread runner = new Thread(group::run, "idle-group");
      runner.start();
      System.out.println("ready");
      System.out.flush();
      while (System.in.read() >= 0) {
        // until the harness closes our stdin
      }
      group.shutdown(Duration.ofSeconds(10));
      runner.join(15000);
    }
  }
}
