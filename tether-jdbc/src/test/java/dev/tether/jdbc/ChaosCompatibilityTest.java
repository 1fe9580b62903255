package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Chaos with real child JVMs and the real clock (subclass per engine): worker processes drain a
 * queue while a controller kills a random one with SIGKILL every 1-3 s and starts a replacement;
 * a worker frozen with SIGSTOP past its lease has its late acknowledgement refused; and (opt-in,
 * PostgreSQL only) the database is restarted mid-drain. The verdict comes from the table and the
 * workers' side files.
 *
 * <p>Quick by default (a few hundred items, runs in {@code mvn verify}). Long runs: {@code
 * TETHER_CHAOS_ITEMS=5000 TETHER_CHAOS_MAX_WORK_MS=500 mvn -pl tether-jdbc -am test
 * -Dtest='*ChaosTest' -Dsurefire.failIfNoSpecifiedTests=false}. Database restart: {@code
 * TETHER_CHAOS_PG_RESTART=1} (disturbs every other user of the server).
 */
abstract class ChaosCompatibilityTest {
  private static final Logger log = LoggerFactory.getLogger(ChaosCompatibilityTest.class);

  private TestDatabase db;
  private TetherStore store;
  private Path sideDir;
  private final List<Process> children = new ArrayList<>();

  protected abstract TestDatabase newDatabase();

  /** Whether this engine can be restarted by the test (PostgreSQL only). */
  protected boolean restartable() {
    return false;
  }

  static int env(String name, int dflt) {
    String v = System.getenv(name);
    return v == null || v.isBlank() ? dflt : Integer.parseInt(v.trim());
  }

  @BeforeEach
  void open() throws IOException {
    db = newDatabase();
    store = db.open(TetherStoreConfig.builder().maximumPoolSize(4).build());
    sideDir = Files.createTempDirectory("tether-chaos");
  }

  @AfterEach
  void close() throws IOException {
    children.forEach(Process::destroyForcibly);
    store.close();
    db.close();
    try (Stream<Path> s = Files.walk(sideDir)) {
      s.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }

  private Process spawn(String... args) throws IOException {
    Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
    List<String> cmd = new ArrayList<>(List.of(java.toString(), "-Xmx96m", "-XX:TieredStopAtLevel=1",
        "-Xshare:auto", "-cp", System.getProperty("java.class.path"), ChaosWorkerMain.class.getName()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
        .redirectOutput(sideDir.resolve("stdout-" + children.size() + ".log").toFile()).start();
    children.add(p);
    return p;
  }

  private Process spawnDrainer(String queue, int n, long leaseMs, int minWork, int maxWork) throws IOException {
    String worker = "w" + n;
    return spawn("drain", db.url(), queue, worker, sideDir.resolve(worker + ".side").toString(),
        Long.toString(leaseMs), Integer.toString(minWork), Integer.toString(maxWork));
  }

  private long unfinished(String queue) {
    return store.read("count", c -> store.sql().inserts().countUnfinished(c, queue));
  }

  /** What the run did, for the verdict and the report. */
  record Run(int items, int kills, long millis, int workers) {}

  private Run drainUnderKills(String queue, int items, int maxAttempts, long leaseMs, int minWork, int maxWork,
      Duration limit, Runnable midway) throws Exception {
    LeaseManager producer = new LeaseManager(store, "producer");
    for (int from = 0; from < items; from += 1000) {
      List<NewWorkItem> batch = new ArrayList<>();
      for (int i = from; i < Math.min(items, from + 1000); i++) {
        batch.add(NewWorkItem.builder(queue).input("item-" + i).maxAttempts(maxAttempts).build());
      }
      producer.enqueueAll(batch);
    }
    Random random = new Random();
    List<Process> live = new ArrayList<>();
    int started = 0;
    for (; started < 4; started++) {
      live.add(spawnDrainer(queue, started, leaseMs, minWork, maxWork));
    }
    int kills = 0;
    long t0 = System.nanoTime();
    long deadline = t0 + limit.toNanos();
    boolean midwayDone = midway == null;
    long nextKill = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1000 + random.nextInt(2001));
    while (unfinished(queue) > 0) {
      assertThat(System.nanoTime()).as("drain finished within %s", limit).isLessThan(deadline);
      if (!midwayDone && unfinished(queue) < items / 2) {
        midway.run();
        midwayDone = true;
      }
      if (System.nanoTime() >= nextKill) {
        Process victim = live.remove(random.nextInt(live.size()));
        victim.destroyForcibly(); // SIGKILL
        assertThat(victim.waitFor(10, TimeUnit.SECONDS)).isTrue();
        kills++;
        live.add(spawnDrainer(queue, started++, leaseMs, minWork, maxWork));
        nextKill = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1000 + random.nextInt(2001));
      }
      Thread.sleep(50);
    }
    for (Process p : live) {
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("a live worker stops once the queue is drained").isTrue();
      assertThat(p.exitValue()).isZero();
    }
    return new Run(items, kills, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0), started);
  }

  /** The verdict, from the table and the side files. */
  private String verify(String queue, Run run) throws Exception {
    Map<Long, int[]> side = new HashMap<>(); // id -> [starts, dones, refused]
    try (Stream<Path> files = Files.list(sideDir)) {
      for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".side"))::iterator) {
        for (String line : Files.readAllLines(f)) {
          String[] w = line.split(" ");
          int[] c = side.computeIfAbsent(Long.parseLong(w[1]), k -> new int[3]);
          c[w[0].equals("START") ? 0 : w[0].equals("DONE") ? 1 : 2]++;
        }
      }
    }
    int completed = 0;
    int failed = 0;
    int redeliveries = 0;
    try (Connection c = store.dataSource().getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT w.id, w.status, w.delivery_count, w.max_attempts,"
            + " (SELECT COUNT(*) FROM tether_work_item_checkpoints k WHERE k.item_id = w.id AND k.kind = 'lease_expired'),"
            + " (SELECT COUNT(*) FROM tether_work_item_checkpoints k WHERE k.item_id = w.id)"
            + " FROM tether_work_items w WHERE w.queue = '" + queue + "' ORDER BY w.id")) {
      int rows = 0;
      while (rs.next()) {
        rows++;
        long id = rs.getLong(1);
        String status = rs.getString(2);
        int deliveries = rs.getInt(3);
        int max = rs.getInt(4);
        int expiries = rs.getInt(5);
        int checkpoints = rs.getInt(6);
        int[] s = side.getOrDefault(id, new int[3]);
        assertThat(status).as("item %d ends completed or failed", id).isIn("completed", "failed");
        assertThat(checkpoints).as("item %d: only expiries leave checkpoints here", id).isEqualTo(expiries);
        assertThat(s[1]).as("item %d completed at most once by the workers' account", id).isLessThanOrEqualTo(1);
        assertThat(s[0]).as("item %d: recorded starts never exceed deliveries", id).isLessThanOrEqualTo(deliveries);
        if (status.equals("completed")) {
          completed++;
          assertThat(s[0]).as("completed item %d ran at least once", id).isGreaterThanOrEqualTo(1);
          assertThat(expiries).as("item %d: one checkpoint per expiry (each redelivery)", id)
              .isEqualTo(deliveries - 1);
        } else {
          failed++;
          assertThat(deliveries).as("failed item %d exhausted its attempts", id).isEqualTo(max);
          assertThat(expiries).as("failed item %d: one checkpoint per expiry", id).isEqualTo(deliveries);
          assertThat(s[1]).isZero();
        }
        redeliveries += expiries;
      }
      assertThat(rows).as("no item missing").isEqualTo(run.items());
    }
    // Each worker holds one item at a time: a kill strands at most one, and a lease that expires
    // without a kill needs a worker stalled past its lease (possible on a loaded machine).
    assertThat(redeliveries).as("expiries (%d kills)", run.kills()).isLessThanOrEqualTo(run.kills() + countRefused(side));
    String figures = String.format(Locale.ROOT,
        "%s: %d items drained in %.1f s by %d worker processes (%d killed with SIGKILL); completed %d, failed %d,"
            + " expiries/redeliveries %d, refused late completions %d",
        queue, run.items(), run.millis() / 1000.0, run.workers(), run.kills(), completed, failed, redeliveries,
        countRefused(side));
    log.info(figures);
    System.out.println(figures);
    return figures;
  }

  private static int countRefused(Map<Long, int[]> side) {
    return side.values().stream().mapToInt(c -> c[2]).sum();
  }

  @Test
  void workersKilledWithSigkillEveryFewSecondsLoseNothingAndCompleteNothingTwice() throws Exception {
    int items = env("TETHER_CHAOS_ITEMS", 400);
    int maxWork = env("TETHER_CHAOS_MAX_WORK_MS", 100);
    Run run = drainUnderKills("chaos", items, 5, 1500, 10, maxWork,
        Duration.ofSeconds(60 + (long) items * maxWork / 1000), null);
    assertThat(run.kills()).as("the controller killed workers").isPositive();
    verify("chaos", run);
  }

  @Test
  void workerFrozenWithSigstopPastItsLeaseHasItsLateAckRefused() throws Exception {
    LeaseManager survivor = new LeaseManager(store, "survivor");
    long id = survivor.enqueue(NewWorkItem.of("frozen", "job"));
    Process child = spawn("freeze", db.url(), "frozen", "sleeper", "1000", "2500");
    Path out = sideDir.resolve("stdout-" + (children.size() - 1) + ".log");
    String acquired = awaitLine(out, "ACQUIRED ", Duration.ofSeconds(30));
    assertThat(acquired).startsWith("ACQUIRED " + id + " ");
    signal(child, "STOP");
    try {
      Lease taken = org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10))
          .pollInterval(Duration.ofMillis(50))
          .until(() -> survivor.acquire("frozen", Duration.ofMinutes(1)), java.util.Optional::isPresent)
          .orElseThrow();
      assertThat(taken.deliveryCount()).isEqualTo(2);
      survivor.complete(id, taken.token(), "survivor".getBytes(StandardCharsets.UTF_8));
    } finally {
      signal(child, "CONT");
    }
    assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
    String result = awaitLine(out, "REFUSED", Duration.ofSeconds(5));
    assertThat(result).as("the frozen worker's late completion").startsWith("REFUSED LeaseExpiredException");
    WorkItem item = survivor.find(id).orElseThrow();
    assertThat(item.status()).isEqualTo(WorkStatus.COMPLETED);
    assertThat(new String(item.output(), StandardCharsets.UTF_8)).as("completed once, by the survivor")
        .isEqualTo("survivor");
    assertThat(item.deliveryCount()).isEqualTo(2);
    assertThat(item.checkpoints()).singleElement().satisfies(c -> {
      assertThat(c.kind()).isEqualTo(Checkpoint.LEASE_EXPIRED);
      assertThat(c.leaseHolder()).isEqualTo("sleeper");
    });
  }

  @Test
  @Tag("on-demand") // excluded from `mvn verify`; see docs/RELIABILITY.md for the command
  void databaseRestartedMidDrainLosesNothing() throws Exception {
    Assumptions.assumeTrue(restartable() && "1".equals(System.getenv("TETHER_CHAOS_PG_RESTART")),
        "opt-in: TETHER_CHAOS_PG_RESTART=1 on PostgreSQL (restarts the shared server)");
    assertThat(TestPostgres.source())
        .as("this test restarts the local cluster, so the tests must use it, not a server embedded"
            + " in the test JVM: start the cluster (127.0.0.1:5432) first")
        .isNotEqualTo(TestPostgres.Source.EMBEDDED);
    int items = env("TETHER_CHAOS_ITEMS", 400);
    int maxWork = env("TETHER_CHAOS_MAX_WORK_MS", 100);
    Run run = drainUnderKills("restart", items, 5, 3000, 10, maxWork,
        Duration.ofSeconds(120 + (long) items * maxWork / 1000), () -> {
          try {
            String version = Files.list(Paths.get("/etc/postgresql")).findFirst().orElseThrow()
                .getFileName().toString();
            log.info("Restarting PostgreSQL {} mid-drain", version);
            Process p = new ProcessBuilder("pg_ctlcluster", "--skip-systemctl-redirect", version, "main",
                "restart").inheritIO().start();
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).as("pg_ctlcluster restart").isZero();
          } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
          }
        });
    String figures = verify("restart", run);
    List<String> outages = new ArrayList<>();
    try (Stream<Path> logs = Files.list(sideDir)) {
      for (Path f : (Iterable<Path>) logs.filter(p -> p.toString().endsWith(".log"))::iterator) {
        Files.readAllLines(f).stream().filter(l -> l.startsWith("OUTAGE")).forEach(outages::add);
      }
    }
    outages.forEach(l -> log.info("{}", l));
    System.out.println(figures + "; outage lines logged by workers " + outages.size());
    assertThat(outages).as("the workers saw the outage").isNotEmpty();
    assertThat(outages).as("every outage error is classified transient (retry with backoff)")
        .allMatch(l -> l.startsWith("OUTAGE StoreUnavailableException"));
  }

  private static void signal(Process p, String sig) throws Exception {
    Process k = new ProcessBuilder("kill", "-" + sig, Long.toString(p.pid())).start();
    assertThat(k.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(k.exitValue()).isZero();
  }

  private static String awaitLine(Path file, String prefix, Duration limit) throws Exception {
    long end = System.nanoTime() + limit.toNanos();
    while (System.nanoTime() < end) {
      if (Files.exists(file)) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(Files.newInputStream(file),
            StandardCharsets.UTF_8))) {
          String line;
          while ((line = r.readLine()) != null) {
            if (line.startsWith(prefix)) {
              return line;
            }
          }
        }
      }
      Thread.sleep(20);
    }
    throw new AssertionError("no line starting with '" + prefix + "' in " + file + " within " + limit + ": "
        + (Files.exists(file) ? Files.readString(file) : "(no output)"));
  }
}
