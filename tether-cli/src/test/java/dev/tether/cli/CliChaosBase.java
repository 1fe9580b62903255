package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.jdbc.Checkpoint;
import dev.tether.jdbc.QueueCount;
import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import dev.tether.jdbc.WorkStatus;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Chaos through real {@code tether worker} processes on one store (SQLite file in {@link
 * CliChaosIT}, a fresh PostgreSQL schema in {@link PostgresCliChaosIT}): several workers drain a
 * queue of small shell commands (each appends its item id to a side file, sleeps, appends again)
 * while the test kills a random worker with SIGKILL every 1-3 s and starts a replacement. The
 * verdict comes from the store ({@code tether stats --json} and {@link QueueMonitor}) and the side
 * file: every item completed (or failed with its attempts used up), none in progress or pending,
 * none missing, one {@code lease_expired} checkpoint per redelivery and no other checkpoint, every
 * completed item ran at least once and never more often than it was delivered.
 *
 * <p>Quick by default (200 items of 10-300 ms, 4 workers of 2 loops, lease 3 s). The long run:
 * {@code TETHER_CLI_CHAOS_ITEMS=5000 TETHER_CLI_CHAOS_MAX_WORK_MS=500}; {@code
 * TETHER_CLI_CHAOS_WORKERS} and {@code TETHER_CLI_CHAOS_SEED} are also read.
 */
abstract class CliChaosBase {
  private static final int MAX_ATTEMPTS = 5;

  @TempDir Path dir;

  /** The store URL (TETHER_DB) every process of the run uses. */
  abstract String storeUrl();

  /** The engine's name in the printed figures. */
  abstract String engine();

  private static int env(String name, int def) {
    String v = System.getenv(name);
    return v == null || v.isBlank() ? def : Integer.parseInt(v.strip());
  }

  /** Short leases (a command stopped by a starved worker would leave a checkpoint ruled out below). */
  private static final String[] WORKER = JarRunner.shortLeaseWorker("--concurrency", "2");

  @Test
  void workersKilledWithSigkillEveryFewSecondsLoseNothingAndCompleteNothingTwice() throws Exception {
    int items = env("TETHER_CLI_CHAOS_ITEMS", 200);
    int maxWorkMs = env("TETHER_CLI_CHAOS_MAX_WORK_MS", 300);
    int workers = env("TETHER_CLI_CHAOS_WORKERS", 4);
    long seed = env("TETHER_CLI_CHAOS_SEED", (int) System.nanoTime());
    Random random = new Random(seed);
    System.out.printf("cli chaos (%s): %d items, 10-%d ms, %d workers, seed %d%n", engine(), items, maxWorkMs, workers, seed);
    long deadlineMs = System.currentTimeMillis() + 90_000L + items * 200L;

    JarRunner t = new JarRunner(dir, storeUrl());
    Path side = dir.resolve("side.log");
    Files.createFile(side);
    StringBuilder file = new StringBuilder();
    for (int i = 0; i < items; i++) {
      int ms = 10 + random.nextInt(maxWorkMs - 10 + 1);
      file.append("sh -c 'echo \"$TETHER_ITEM_ID $TETHER_DELIVERY start\" >> ").append(side)
          .append("; sleep ").append(String.format("%d.%03d", ms / 1000, ms % 1000))
          .append("; echo \"$TETHER_ITEM_ID $TETHER_DELIVERY done\" >> ").append(side).append("'\n");
    }
    Path commands = dir.resolve("commands.txt");
    Files.writeString(commands, file.toString(), StandardCharsets.UTF_8);
    String ids = t.run("enqueue", "--max-attempts", Integer.toString(MAX_ATTEMPTS), "--file",
        commands.toString(), "--json");
    assertThat(ids).startsWith("{\"ids\":[");

    long start = System.nanoTime();
    List<JarRunner.Proc> live = new ArrayList<>();
    int started = 0;
    int kills = 0;
    try (TetherStore store = TetherStore.open(t.storeUrl())) {
      QueueMonitor monitor = new QueueMonitor(store);
      for (int i = 0; i < workers; i++) {
        live.add(t.start(WORKER));
        started++;
      }
      long nextKill = System.currentTimeMillis() + 1000 + random.nextInt(2001);
      while (true) {
        Map<WorkStatus, Long> counts = counts(monitor);
        if (counts.getOrDefault(WorkStatus.PENDING, 0L) == 0
            && counts.getOrDefault(WorkStatus.IN_PROGRESS, 0L) == 0) {
          break;
        }
        assertThat(System.currentTimeMillis()).as("drain deadline; counts %s", counts).isLessThan(deadlineMs);
        for (JarRunner.Proc p : live) {
          assertThat(p.process.isAlive() || p.process.exitValue() == 137)
              .as("a worker ended by itself: %s", p.err()).isTrue();
        }
        if (System.currentTimeMillis() >= nextKill) {
          JarRunner.Proc victim = live.remove(random.nextInt(live.size()));
          JarRunner.kill9(victim);
          kills++;
          live.add(t.start(WORKER));
          started++;
          nextKill = System.currentTimeMillis() + 1000 + random.nextInt(2001);
        }
        Thread.sleep(100);
      }
      long drainMs = (System.nanoTime() - start) / 1_000_000;
      for (JarRunner.Proc p : live) {
        JarRunner.awaitWorkerStarted(p); // a replacement may have been started just now
        JarRunner.term(p);
      }
      for (JarRunner.Proc p : live) {
        assertThat(p.waitFor(30)).as("survivor exit; stderr %s", p.err()).isZero();
      }
      Thread.sleep(maxWorkMs + 500L); // orphaned commands of killed workers finish their lines

      String stats = t.run("stats", "--json");
      Map<String, Integer> byStatus = new HashMap<>();
      for (String s : List.of("pending", "in_progress", "completed", "failed")) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("^\\{.*?\"" + s + "\":(\\d+)").matcher(stats);
        assertThat(m.find()).as("stats has %s: %s", s, stats).isTrue();
        byStatus.put(s, Integer.parseInt(m.group(1)));
      }
      assertThat(byStatus.get("pending")).isZero();
      assertThat(byStatus.get("in_progress")).isZero();
      assertThat(byStatus.get("completed") + byStatus.get("failed")).isEqualTo(items);

      Map<Long, int[]> lines = new HashMap<>(); // id -> {start, done}
      for (String line : Files.readAllLines(side, StandardCharsets.UTF_8)) {
        String[] f = line.split(" ");
        int[] c = lines.computeIfAbsent(Long.parseLong(f[0]), k -> new int[2]);
        c[f[2].equals("start") ? 0 : 1]++;
      }

      List<WorkItem> all = monitor.items(dev.tether.jdbc.ItemQuery.all().withQueue("default")
          .withStatus(null).withLimit(items + 10));
      assertThat(all).hasSize(items);
      int completed = 0;
      int failed = 0;
      int expiries = 0;
      Map<Integer, Integer> deliveries = new java.util.TreeMap<>();
      for (WorkItem listed : all) {
        WorkItem item = monitor.item(listed.id()).orElseThrow();
        List<String> kinds = item.checkpoints().stream().map(Checkpoint::kind).collect(Collectors.toList());
        long expired = kinds.stream().filter(Checkpoint.LEASE_EXPIRED::equals).count();
        assertThat(kinds).as("item %d checkpoints", item.id()).allMatch(Checkpoint.LEASE_EXPIRED::equals);
        int[] c = lines.getOrDefault(item.id(), new int[2]);
        if (item.status() == WorkStatus.COMPLETED) {
          completed++;
          assertThat(expired).as("item %d: one lease_expired per redelivery", item.id())
              .isEqualTo(item.deliveryCount() - 1);
          assertThat(c[0]).as("item %d ran", item.id()).isBetween(1, item.deliveryCount());
        } else {
          assertThat(item.status()).as("item %d", item.id()).isEqualTo(WorkStatus.FAILED);
          failed++;
          assertThat(item.deliveryCount()).isEqualTo(MAX_ATTEMPTS);
          assertThat(expired).isEqualTo(MAX_ATTEMPTS);
          assertThat(c[0]).isLessThanOrEqualTo(item.deliveryCount());
        }
        expiries += expired;
        deliveries.merge(item.deliveryCount(), 1, Integer::sum);
      }
      assertThat(completed).isEqualTo(byStatus.get("completed"));
      // each killed worker held at most 2 items (2 loops)
      assertThat(expiries).isLessThanOrEqualTo(2 * kills);
      assertThat(monitor.countsByCheckpointKind().keySet()).allMatch(Checkpoint.LEASE_EXPIRED::equals);
      assertThat(monitor.countsByCheckpointKind().getOrDefault(Checkpoint.LEASE_EXPIRED, 0L)).isEqualTo(expiries);
      System.out.printf(
          "cli chaos (%s): drained in %d ms; %d worker JVMs, %d SIGKILLs; %d completed, %d failed;"
              + " %d expiries; deliveries per item %s; side-file lines %d%n",
          engine(), drainMs, started, kills, completed, failed, expiries, deliveries,
          Files.readAllLines(side).size());
    } finally {
      for (JarRunner.Proc p : live) {
        p.process.destroyForcibly();
      }
    }
  }

  private static Map<WorkStatus, Long> counts(QueueMonitor monitor) {
    Map<WorkStatus, Long> m = new HashMap<>();
    for (QueueCount c : monitor.countsByStatus()) {
      m.merge(c.status(), c.count(), Long::sum);
    }
    return m;
  }
}
