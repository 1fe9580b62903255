package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.jdbc.Checkpoint;
import dev.tether.jdbc.ItemQuery;
import dev.tether.jdbc.PostgresTestSchema;
import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.TestPostgres;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import dev.tether.jdbc.WorkStatus;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A {@code tether worker --health-port 0} drains items on PostgreSQL while the test restarts the
 * PostgreSQL server ({@code pg_ctlcluster --skip-systemctl-redirect <version> main restart}):
 * {@code /health/ready} answers 503 during the outage (also during the quick restart, which is
 * over before the pool's connection timeout) and 200 again after it, the worker process
 * survives, and every item ends completed, each having run at least once.
 *
 * <p>On demand only (it restarts the machine's shared PostgreSQL): {@code mvn -B -pl tether-cli -am
 * verify -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false -Dfailsafe.failIfNoSpecifiedTests=false
 * -Dtether.test.excludedGroups=none -Dgroups=on-demand -Dit.test=PostgresRestartIT}. Needs root
 * (or the postgres user) and a local cluster under {@code /etc/postgresql}.
 */
@Tag("on-demand")
@Timeout(180)
class PostgresRestartIT {
  private static final int ITEMS = 400;
  private static final int WORK_MS = 200;
  private static final long OUTAGE_MS = 15_000;

  private static void pgCtl(String version, String action) throws IOException, InterruptedException {
    Process p = new ProcessBuilder("pg_ctlcluster", "--skip-systemctl-redirect", version, "main", action)
        .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor()).as("pg_ctlcluster %s %s main: %s", version, action, out).isZero();
  }

  @TempDir Path dir;

  private static int portFrom(JarRunner.Proc p) {
    Matcher m = Pattern.compile("dashboard: http://127\\.0\\.0\\.1:(\\d+)/").matcher(p.out());
    return m.find() ? Integer.parseInt(m.group(1)) : -1;
  }

  private static String clusterVersion() throws IOException {
    try (var s = Files.list(Path.of("/etc/postgresql"))) {
      List<Path> versions = s.collect(Collectors.toList());
      assertThat(versions).as("one PostgreSQL cluster version under /etc/postgresql").hasSize(1);
      return versions.get(0).getFileName().toString();
    }
  }

  @Test
  void workerSurvivesAPostgresRestartReadinessFailsDuringTheOutageAndNothingIsLost() throws Exception {
    assertThat(TestPostgres.source())
        .as("PostgresRestartIT restarts the local cluster, so the tests must use it, not a server"
            + " embedded in the test JVM: start the cluster (127.0.0.1:5432) first")
        .isNotEqualTo(TestPostgres.Source.EMBEDDED);
    String version = clusterVersion();
    try (PostgresTestSchema schema = new PostgresTestSchema("tether_cli_")) {
      JarRunner t = new JarRunner(dir, schema.url());
      Path side = dir.resolve("side.log");
      Files.createFile(side);
      StringBuilder file = new StringBuilder();
      for (int i = 0; i < ITEMS; i++) {
        file.append("sh -c 'echo \"$TETHER_ITEM_ID $TETHER_DELIVERY start\" >> ").append(side)
            .append("; sleep 0.").append(WORK_MS)
            .append("; echo \"$TETHER_ITEM_ID $TETHER_DELIVERY done\" >> ").append(side).append("'\n");
      }
      Path commands = dir.resolve("commands.txt");
      Files.writeString(commands, file.toString(), StandardCharsets.UTF_8);

      JarRunner.Proc worker = t.start("worker", "--concurrency", "2", "--visibility", "10s",
          "--extend-every", "1s", "--extension", "5s", "--kill-grace", "1s", "--sweep-every", "1s",
          "--health-port", "0");
      try {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
        await().atMost(Duration.ofSeconds(30)).until(() -> portFrom(worker) > 0 || !worker.process.isAlive());
        assertThat(worker.process.isAlive()).as("worker died at start: %s", worker.err()).isTrue();
        URI ready = URI.create("http://127.0.0.1:" + portFrom(worker) + "/health/ready");
        await().atMost(Duration.ofSeconds(10)).ignoreExceptions()
            .until(() -> http.send(HttpRequest.newBuilder(ready).build(), HttpResponse.BodyHandlers.ofString())
                .statusCode() == 200);

        // readiness probe every 50 ms, in the background, for the whole run
        long t0 = System.currentTimeMillis();
        AtomicBoolean probing = new AtomicBoolean(true);
        AtomicLong first503 = new AtomicLong(-1);
        AtomicLong last503 = new AtomicLong(-1);
        AtomicLong first200After503 = new AtomicLong(-1);
        AtomicInteger probes = new AtomicInteger();
        AtomicInteger probes503 = new AtomicInteger();
        AtomicInteger probeErrors = new AtomicInteger();
        List<long[]> changes = java.util.Collections.synchronizedList(new ArrayList<>()); // {ms, status}
        Thread prober = new Thread(() -> {
          while (probing.get()) {
            try {
              int code = http.send(HttpRequest.newBuilder(ready).timeout(Duration.ofSeconds(2)).build(),
                  HttpResponse.BodyHandlers.ofString()).statusCode();
              long now = System.currentTimeMillis() - t0;
              probes.incrementAndGet();
              if (changes.isEmpty() || changes.get(changes.size() - 1)[1] != code) {
                changes.add(new long[] {now, code});
              }
              if (code == 503) {
                probes503.incrementAndGet();
                first503.compareAndSet(-1, now);
                last503.set(now);
                first200After503.set(-1);
              } else if (code == 200 && last503.get() >= 0) {
                first200After503.compareAndSet(-1, now);
              }
              Thread.sleep(50);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              return;
            } catch (IOException e) {
              probeErrors.incrementAndGet();
            }
          }
        }, "test-ready-prober");
        prober.setDaemon(true);
        prober.start();

        String ids = t.run("enqueue", "--max-attempts", "5", "--file", commands.toString(), "--json");
        assertThat(ids).startsWith("{\"ids\":[");
        long enqueuedAt = System.currentTimeMillis() - t0;
        Thread.sleep(3000); // draining

        // phase 1: the restart the issue names (fast shutdown + start, ~2 s)
        long restartFrom = System.currentTimeMillis() - t0;
        pgCtl(version, "restart");
        long restartTo = System.currentTimeMillis() - t0;
        assertThat(worker.process.isAlive()).as("worker survived the restart: %s", worker.err()).isTrue();
        Thread.sleep(3000);
        long restart503 = probes503.get();
        long restartFirst503 = first503.get();

        // phase 2: an outage longer than the pool's connection timeout (10 s): stop, wait, start
        long stopFrom = System.currentTimeMillis() - t0;
        pgCtl(version, "stop");
        long stopped = System.currentTimeMillis() - t0;
        Thread.sleep(OUTAGE_MS);
        assertThat(worker.process.isAlive()).as("worker alive with PostgreSQL down: %s", worker.err()).isTrue();
        long startFrom = System.currentTimeMillis() - t0;
        pgCtl(version, "start");
        long startTo = System.currentTimeMillis() - t0;
        assertThat(worker.process.isAlive()).as("worker survived the outage: %s", worker.err()).isTrue();

        long drainedAt;
        Map<String, Integer> byStatus = new HashMap<>();
        Map<Integer, Integer> deliveries = new TreeMap<>();
        Map<String, Long> checkpointKinds = new TreeMap<>();
        try (TetherStore store = TetherStore.open(schema.url())) {
          QueueMonitor monitor = new QueueMonitor(store);
          await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200)).until(() -> {
            assertThat(worker.process.isAlive()).as("worker alive: %s", worker.err()).isTrue();
            return monitor.countsByStatus().stream()
                .filter(c -> c.status() == WorkStatus.PENDING || c.status() == WorkStatus.IN_PROGRESS)
                .mapToLong(c -> c.count()).sum() == 0;
          });
          drainedAt = System.currentTimeMillis() - t0;
          Thread.sleep(2000); // a few more probes after the drain
          probing.set(false);
          prober.join(5000);

          Map<Long, int[]> lines = new HashMap<>();
          for (String line : Files.readAllLines(side, StandardCharsets.UTF_8)) {
            String[] f = line.split(" ");
            int[] c = lines.computeIfAbsent(Long.parseLong(f[0]), k -> new int[2]);
            c[f[2].equals("start") ? 0 : 1]++;
          }
          List<WorkItem> all = monitor.items(ItemQuery.all().withQueue("default").withStatus(null).withLimit(ITEMS + 10));
          assertThat(all).as("no item missing").hasSize(ITEMS);
          for (WorkItem listed : all) {
            WorkItem item = monitor.item(listed.id()).orElseThrow();
            byStatus.merge(item.status().toString(), 1, Integer::sum);
            deliveries.merge(item.deliveryCount(), 1, Integer::sum);
            assertThat(item.status()).as("item %d", item.id()).isEqualTo(WorkStatus.COMPLETED);
            int[] c = lines.getOrDefault(item.id(), new int[2]);
            assertThat(c[0]).as("item %d ran", item.id()).isBetween(1, item.deliveryCount());
            long expired = item.checkpoints().stream().map(Checkpoint::kind)
                .filter(Checkpoint.LEASE_EXPIRED::equals).count();
            assertThat(expired).as("item %d: one lease_expired per redelivery", item.id())
                .isEqualTo(item.deliveryCount() - 1);
          }
          checkpointKinds.putAll(monitor.countsByCheckpointKind());
        }


        String err = worker.err();
        int errorLines = 0;
        int warnLines = 0;
        for (String l : err.split("\n")) {
          if (l.contains("] ERROR ")) {
            errorLines++;
          } else if (l.contains("] WARN ")) {
            warnLines++;
          }
        }
        JarRunner.term(worker);
        int exit = worker.waitFor(30);
        assertThat(exit).as("worker exit after SIGTERM; stderr %s", err).isZero();

        System.out.printf(
            "pg restart: %d items of %d ms; enqueued at %d ms; restart command %d..%d ms (%d ms);"
                + " 503 probes by 3 s after the restart: %d (first at %d ms);"
                + " stop %d..%d ms, start %d..%d ms;"
                + " readiness 503 first at %d ms, last at %d ms (%d of %d probes, %d probe I/O errors),"
                + " 200 again at %d ms; drained at %d ms; statuses %s; deliveries per item %s;"
                + " checkpoints %s; worker log lines ERROR %d, WARN %d; worker exit %d%n",
            ITEMS, WORK_MS, enqueuedAt, restartFrom, restartTo, restartTo - restartFrom,
            restart503, restartFirst503, stopFrom, stopped, startFrom, startTo,
            first503.get(), last503.get(), probes503.get(), probes.get(), probeErrors.get(),
            first200After503.get(), drainedAt, byStatus, deliveries, checkpointKinds,
            errorLines, warnLines, exit);
        List<String> firstErrors = new ArrayList<>();
        for (String l : err.split("\n")) {
          if ((l.contains("] ERROR ") || l.contains("] WARN ")) && firstErrors.size() < 15) {
            firstErrors.add(l);
          }
        }
        System.out.println("first worker WARN/ERROR lines:\n" + String.join("\n", firstErrors));
        List<String> changeList = new ArrayList<>();
        synchronized (changes) {
          for (long[] c : changes) {
            changeList.add(c[0] + " ms: " + c[1]);
          }
        }
        System.out.println("readiness changes: " + changeList);
        // phase 1 (quick restart): 503 at some point from the restart until the stop, then 200
        // again before the stop began
        long quick503 = -1;
        long quick200 = -1;
        synchronized (changes) {
          for (long[] c : changes) {
            if (c[0] >= restartFrom && c[0] < stopFrom) {
              if (c[1] == 503 && quick503 < 0) {
                quick503 = c[0];
              } else if (c[1] == 200 && quick503 >= 0) {
                quick200 = c[0];
              }
            }
          }
        }
        System.out.printf("quick restart: first 503 at %d ms (%d ms after the restart began),"
            + " 200 again at %d ms (%d ms after the restart command returned)%n",
            quick503, quick503 - restartFrom, quick200, quick200 - restartTo);
        Files.writeString(Path.of("target", "PostgresRestartIT-worker.err"), err, StandardCharsets.UTF_8);
        assertThat(quick503).as("readiness went 503 during the quick restart (%d..%d ms)",
            restartFrom, restartTo).isBetween(restartFrom, restartTo + 3000);
        assertThat(quick200).as("readiness back to 200 after the quick restart, before the stop")
            .isBetween(quick503, stopFrom);
        assertThat(first503.get()).as("readiness went 503 during the outage (first at %d ms, stop from %d ms)",
            first503.get(), stopFrom).isBetween(restartFrom, startTo);
        assertThat(last503.get()).as("last 503 before PostgreSQL was back + 35 s").isLessThan(startTo + 35_000);
        assertThat(first200After503.get()).as("readiness back to 200 after the outage").isGreaterThan(last503.get());
      } finally {
        worker.process.destroyForcibly();
      }
    }
  }
}
