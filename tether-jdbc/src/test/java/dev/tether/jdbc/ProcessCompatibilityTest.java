package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Crash and cluster behaviour with real child JVMs and the real clock (database clock on
 * PostgreSQL, system clock on SQLite). Subclass per engine.
 */
abstract class ProcessCompatibilityTest {
  private TestDatabase db;
  private TetherStore store;
  private final List<Process> children = new ArrayList<>();

  protected abstract TestDatabase newDatabase();

  @BeforeEach
  void open() {
    db = newDatabase();
    store = db.open(TetherStoreConfig.builder().maximumPoolSize(6).build());
  }

  @AfterEach
  void close() {
    children.forEach(Process::destroyForcibly);
    store.close();
    db.close();
  }

  private Process spawn(String... args) throws IOException {
    Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
    List<String> cmd = new ArrayList<>(List.of(java.toString(), "-Xmx128m", "-XX:TieredStopAtLevel=1",
        "-cp", System.getProperty("java.class.path"), WorkerMain.class.getName()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    children.add(p);
    return p;
  }

  @Test
  void itemOfAWorkerKilledWithSigkillIsRedeliveredAfterExpiryWithOneCheckpoint() throws Exception {
    LeaseManager lm = new LeaseManager(store, "survivor");
    long id = lm.enqueue(NewWorkItem.of("crash", "long job"));
    Process child = spawn("hold", db.url(), "crash", "doomed-child", "2000");
    String line = awaitAcquired(child);
    assertThat(line).startsWith("ACQUIRED " + id + " ");
    kill9(child);
    assertThat(lm.acquire("crash", Duration.ofMinutes(1))).as("still leased by the dead child").isEmpty();

    Lease again = await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100))
        .until(() -> lm.acquire("crash", Duration.ofMinutes(1)), Optional::isPresent).orElseThrow();
    assertThat(again.itemId()).isEqualTo(id);
    assertThat(again.deliveryCount()).isEqualTo(2);
    WorkItem item = lm.find(id).orElseThrow();
    assertThat(item.checkpoints()).singleElement().satisfies(c -> {
      assertThat(c.kind()).isEqualTo(Checkpoint.LEASE_EXPIRED);
      assertThat(c.leaseHolder()).isEqualTo("doomed-child");
      assertThat(c.deliveryCount()).isEqualTo(1);
    });
    lm.complete(id, again.token(), null);
  }

  @Test
  void jobKilledWithSigkillAfterStepKResumesAtStepKPlusOneOnAnotherWorkerWithTheHandoverAudited()
      throws Exception {
    LeaseManager lm = new LeaseManager(store, "observer");
    long id = lm.enqueue(NewWorkItem.of("steps", "six steps"));
    Process first = spawnMain(CheckpointingWorkerMain.class, db.url(), "steps", "first", "6", "3", "2000");
    List<String> firstSteps = readSteps(first, 3);
    assertThat(firstSteps).containsExactly("STEP 1 1", "STEP 1 2", "STEP 1 3");
    kill9(first);
    assertThat(lm.find(id).orElseThrow().progress()).asString(StandardCharsets.UTF_8).isEqualTo("3");

    Process second = spawnMain(CheckpointingWorkerMain.class, db.url(), "steps", "second", "6", "0", "2000");
    assertThat(readSteps(second, 3)).containsExactly("STEP 2 4", "STEP 2 5", "STEP 2 6");
    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
        .until(() -> lm.find(id).orElseThrow().status() == WorkStatus.COMPLETED);
    second.destroyForcibly();

    WorkItem item = lm.find(id).orElseThrow();
    assertThat(item.deliveryCount()).isEqualTo(2);
    assertThat(item.progressDelivery()).isEqualTo(2);
    assertThat(item.checkpoints()).extracting(Checkpoint::kind)
        .containsExactly(Checkpoint.LEASE_EXPIRED, Checkpoint.PROGRESS_TAKEN_OVER);
    assertThat(item.checkpoints().get(0)).satisfies(c -> {
      assertThat(c.leaseHolder()).isEqualTo("first");
      assertThat(c.deliveryCount()).isEqualTo(1);
    });
    assertThat(item.checkpoints().get(1)).satisfies(c -> {
      assertThat(c.leaseHolder()).isEqualTo("second");
      assertThat(c.deliveryCount()).isEqualTo(2);
      assertThat(c.reason()).startsWith("delivery 2 starts from the progress checkpoint written by delivery 1 at ");
    });
  }

  private Process spawnMain(Class<?> main, String... args) throws IOException {
    Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
    List<String> cmd = new ArrayList<>(List.of(java.toString(), "-Xmx128m", "-XX:TieredStopAtLevel=1",
        "-cp", System.getProperty("java.class.path"), main.getName()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    children.add(p);
    return p;
  }

  /** Reads the child's output until it printed {@code count} STEP lines; returns them. */
  private static List<String> readSteps(Process child, int count) throws IOException {
    BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
    List<String> steps = new ArrayList<>();
    List<String> other = new ArrayList<>();
    while (steps.size() < count) {
      String line = out.readLine();
      assertThat(line).as("child output before step %d; other lines: %s", steps.size() + 1, other).isNotNull();
      if (line.startsWith("STEP ")) {
        steps.add(line);
      } else {
        other.add(line);
      }
    }
    return steps;
  }

  private static String awaitAcquired(Process child) throws IOException {
    BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
    String line;
    do {
      line = out.readLine();
      assertThat(line).as("child output before it acquired").isNotNull();
    } while (!line.startsWith("ACQUIRED "));
    return line;
  }

  private static void kill9(Process child) throws InterruptedException {
    child.destroyForcibly(); // SIGKILL on Unix: no shutdown hooks, no release, no renewal
    assertThat(child.waitFor(10, TimeUnit.SECONDS)).isTrue();
  }

  @Test
  void poisonItemThatKillsEveryWorkerProcessEndsFailedAfterMaxAttempts() throws Exception {
    LeaseManager lm = new LeaseManager(store, "observer");
    long id = lm.enqueue(NewWorkItem.builder("poison").input("kills its worker").maxAttempts(3).build());
    for (int delivery = 1; delivery <= 3; delivery++) {
      Process child = spawn("hold", db.url(), "poison", "victim-" + delivery, "1000");
      assertThat(awaitAcquired(child)).isEqualTo("ACQUIRED " + id + " " + lm.find(id).orElseThrow().leaseToken()
          + " " + delivery);
      kill9(child);
    }
    // The third lease expires; the next acquirer fails the item instead of delivering it.
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100)).until(() -> {
      assertThat(lm.acquire("poison", Duration.ofMinutes(1))).isEmpty();
      return lm.find(id).orElseThrow().status() == WorkStatus.FAILED;
    });
    WorkItem item = lm.find(id).orElseThrow();
    assertThat(item.deliveryCount()).isEqualTo(3);
    assertThat(item.errorMessage()).contains("no attempts left");
    assertThat(item.checkpoints()).extracting(Checkpoint::leaseHolder).containsExactly("victim-1", "victim-2", "victim-3");
    assertThat(item.checkpoints()).allMatch(c -> c.kind().equals(Checkpoint.LEASE_EXPIRED));
  }

  @Test
  void threadsAndProcessesDrainTenThousandItemsEachCompletedExactlyOnce() throws Exception {
    int total = 10_000;
    try (Connection c = store.dataSource().getConnection(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE completions (item_id BIGINT NOT NULL, worker TEXT NOT NULL)");
    }
    LeaseManager producer = new LeaseManager(store, "producer");
    for (int chunk = 0; chunk < total / 1000; chunk++) {
      List<NewWorkItem> items = new ArrayList<>();
      for (int i = 0; i < 1000; i++) {
        items.add(NewWorkItem.of("cluster", "item-" + (chunk * 1000 + i)));
      }
      producer.enqueueAll(items);
    }
    List<Process> procs = List.of(
        spawn("drain", db.url(), "cluster", "proc-1", "10"),
        spawn("drain", db.url(), "cluster", "proc-2", "10"));
    ExecutorService threads = Executors.newFixedThreadPool(3);
    List<Future<Integer>> results = new ArrayList<>();
    for (int t = 0; t < 3; t++) {
      LeaseManager lm = new LeaseManager(store, "thread-" + t);
      results.add(threads.submit(() -> WorkerMain.drain(store, lm, "cluster", 10)));
    }
    int byThreads = 0;
    for (Future<Integer> f : results) {
      byThreads += f.get(5, TimeUnit.MINUTES);
    }
    threads.shutdown();
    for (Process p : procs) {
      assertThat(p.waitFor(2, TimeUnit.MINUTES)).as("child finished").isTrue();
      String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(p.exitValue()).as("child exit; output: %s", output).isZero();
    }
    try (Connection c = store.dataSource().getConnection(); Statement st = c.createStatement()) {
      try (ResultSet rs = st.executeQuery(
          "SELECT COUNT(*), COUNT(DISTINCT item_id), COUNT(DISTINCT worker) FROM completions")) {
        rs.next();
        assertThat(rs.getLong(1)).as("completions recorded").isEqualTo(total);
        assertThat(rs.getLong(2)).as("distinct items completed (no double completion)").isEqualTo(total);
        assertThat(rs.getLong(3)).as("workers that did some work").isGreaterThanOrEqualTo(3);
      }
      try (ResultSet rs = st.executeQuery(
          "SELECT status, COUNT(*) FROM tether_work_items WHERE queue = 'cluster' GROUP BY status")) {
        rs.next();
        assertThat(rs.getString(1)).isEqualTo("completed");
        assertThat(rs.getLong(2)).isEqualTo(total);
        assertThat(rs.next()).as("no item left in another status").isFalse();
      }
      try (ResultSet rs = st.executeQuery(
          "SELECT COUNT(*) FROM completions WHERE worker LIKE 'proc-%'")) {
        rs.next();
        assertThat(rs.getLong(1)).as("items completed by the child processes").isPositive();
      }
    }
    assertThat(byThreads).isLessThan(total);
  }
}
