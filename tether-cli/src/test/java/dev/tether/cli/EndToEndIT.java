package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.time.Instant;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the real jar as separate processes against a temporary SQLite file. Worker timeouts are
 * short (lease 3 s, extended by 2 s at most every 500 ms) so that stalls show within seconds.
 */
@Timeout(120)
class EndToEndIT {
  @TempDir Path dir;

  private static long id(String out) {
    return Long.parseLong(out.strip());
  }

  /**
   * Waits until item {@code id} has {@code status}; on a timeout, fails with where the item is
   * (status, deliveries, audit trail) and the workers' last stderr lines.
   */
  private static void awaitStatus(JarRunner t, long id, String status, int seconds, JarRunner.Proc... workers)
      throws Exception {
    try {
      await().atMost(Duration.ofSeconds(seconds)).until(() -> status.equals(t.status(id)));
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      StringBuilder m = new StringBuilder("item " + id + " not " + status + " within " + seconds + " s: status "
          + t.status(id) + ", " + t.deliveries(id) + " deliveries, checkpoints " + t.checkpointKinds(id));
      for (int i = 0; i < workers.length; i++) {
        m.append("\nworker ").append(i + 1).append("'s stderr:\n").append(workers[i].errTail());
      }
      throw new AssertionError(m.toString(), e);
    }
  }

  @Test
  void enqueuedCommandIsCompletedByAWorkerWithItsOutputStored() throws Exception {
    JarRunner t = new JarRunner(dir);
    long id = id(t.run("enqueue", "--", "sh", "-c", "echo hello from $TETHER_ITEM_ID"));
    JarRunner.Proc w = t.start(JarRunner.shortLeaseWorker());
    try {
      awaitStatus(t, id, "completed", 30, w);
    } finally {
      JarRunner.term(w);
      assertThat(w.waitFor(20)).isZero();
    }
    String inspect = t.run("inspect", Long.toString(id), "--json");
    assertThat(inspect).contains("\"exit_status\":0").contains("hello from " + id);
    assertThat(t.deliveries(id)).isEqualTo(1);
  }

  @Test
  void itemOfAWorkerKilledWithSigkillIsFinishedByASecondWorker() throws Exception {
    JarRunner t = new JarRunner(dir);
    long id = id(t.run("enqueue", "--", "sh", "-c",
        "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo step $i; sleep 0.25; done"));
    JarRunner.Proc first = t.start(JarRunner.shortLeaseWorker());
    await().atMost(Duration.ofSeconds(30)).until(() -> "in_progress".equals(t.status(id)));
    Thread.sleep(500); // mid-item
    JarRunner.kill9(first);
    assertThat(t.status(id)).isEqualTo("in_progress");
    JarRunner.Proc second = t.start(JarRunner.shortLeaseWorker());
    try {
      awaitStatus(t, id, "completed", 40, first, second);
    } finally {
      JarRunner.term(second);
      second.waitFor(20);
    }
    assertThat(t.deliveries(id)).isEqualTo(2);
    assertThat(t.checkpointKinds(id)).containsExactly("lease_expired");
  }

  @Test
  void runningCommandOfAWorkerKilledWithSigkillDiesWithIt() throws Exception {
    JarRunner t = new JarRunner(dir);
    Path pidFile = dir.resolve("child.pid");
    // The shell writes its pid, then becomes the sleep (exec keeps the pid).
    long id = id(t.run("enqueue", "--", "sh", "-c", "echo $$ > '" + pidFile + "'; exec sleep 120"));
    JarRunner.Proc w = t.start("worker", "--visibility", "10m");
    await().atMost(Duration.ofSeconds(30)).until(() -> Files.exists(pidFile) && Files.size(pidFile) > 1);
    long pid = Long.parseLong(Files.readString(pidFile).strip());
    assertThat(ProcessHandle.of(pid)).as("the command runs").hasValueSatisfying(
        h -> assertThat(h.isAlive()).isTrue());
    JarRunner.kill9(w);
    await().atMost(Duration.ofSeconds(10))
        .until(() -> ProcessHandle.of(pid).map(h -> !h.isAlive()).orElse(true));
    assertThat(t.status(id)).isEqualTo("in_progress"); // its lease runs out; another worker takes it
  }

  @Test
  void whatARunningCommandStartedDiesWithAWorkerKilledWithSigkill() throws Exception {
    // The parent-death signal reaches the shell only: its background job, a pipeline's stage and
    // a process in a group of its own were re-parented and ran on beside the next delivery.
    JarRunner t = new JarRunner(dir);
    Path pids = dir.resolve("started.pids");
    long id = id(t.run("enqueue", "--", "sh", "-c", "sleep 121 & echo $! > '" + pids + ".tmp';"
        + " perl -e 'setpgrp(0, 0); exec q(sleep), 122' & echo $! >> '" + pids + ".tmp';"
        + " mv '" + pids + ".tmp' '" + pids + "'; sleep 123 | cat"));
    JarRunner.Proc w = t.start("worker", "--visibility", "10m");
    await().atMost(Duration.ofSeconds(30)).until(() -> Files.exists(pids));
    List<Long> started = new java.util.ArrayList<>();
    for (String line : Files.readAllLines(pids)) {
      started.add(Long.parseLong(line.strip()));
    }
    assertThat(started).hasSize(2);
    try {
      for (long pid : started) {
        await().atMost(Duration.ofSeconds(5)).until(() -> running(pid));
      }
      long own = started.get(1);
      await("perl's process group of its own").atMost(Duration.ofSeconds(5))
          .until(() -> statField(own, 2).equals(Long.toString(own)));
      await("the pipeline's sleep 123").atMost(Duration.ofSeconds(5))
          .until(() -> ProcessHandle.allProcesses().anyMatch(
              h -> h.info().commandLine().orElse("").endsWith("sleep 123")));
      JarRunner.kill9(w);
      for (long pid : started) {
        await("process " + pid + " after the worker's death").atMost(Duration.ofSeconds(10))
            .until(() -> !running(pid));
      }
      await("the pipeline's sleep 123").atMost(Duration.ofSeconds(10))
          .until(() -> ProcessHandle.allProcesses().noneMatch(
              h -> h.info().commandLine().orElse("").endsWith("sleep 123")));
    } finally {
      for (long pid : started) {
        ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
      }
      ProcessHandle.allProcesses().filter(h -> h.info().commandLine().orElse("").endsWith("sleep 123"))
          .forEach(ProcessHandle::destroyForcibly);
    }
    assertThat(t.status(id)).isEqualTo("in_progress"); // its lease runs out; another worker takes it
  }

  /** Whether {@code pid} runs (a zombie, which waits only to be collected, does not). */
  private static boolean running(long pid) {
    String state = statField(pid, 0);
    return !state.isEmpty() && !state.equals("Z");
  }

  /**
   * Field {@code i} of {@code /proc/PID/stat} after the process name (0: state, 2: process
   * group), or "" if it cannot be read.
   */
  private static String statField(long pid, int i) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      return stat.substring(stat.lastIndexOf(") ") + 2).split(" ")[i];
    } catch (java.io.IOException | RuntimeException e) {
      return "";
    }
  }

  @Test
  void silentCommandLosesItsLeaseWhileAChattyOneOfTheSameLengthKeepsIt() throws Exception {
    JarRunner t = new JarRunner(dir);
    long silent = id(t.run("enqueue", "--max-attempts", "2", "--", "sh", "-c", "sleep 6"));
    long chatty = id(t.run("enqueue", "--max-attempts", "2", "--", "sh", "-c",
        "for i in $(seq 1 20); do echo tick $i; sleep 0.3; done"));
    JarRunner.Proc w = t.start(JarRunner.shortLeaseWorker("--concurrency", "3"));
    try {
      await().atMost(Duration.ofSeconds(60))
          .until(() -> "completed".equals(t.status(chatty)) && "failed".equals(t.status(silent)));
    } finally {
      JarRunner.term(w);
      w.waitFor(20);
    }
    assertThat(t.deliveries(chatty)).isEqualTo(1);
    assertThat(t.checkpointKinds(chatty)).isEmpty();
    assertThat(t.deliveries(silent)).isEqualTo(2);
    assertThat(t.checkpointKinds(silent)).containsExactly("lease_expired", "lease_expired");
    assertThat(w.err()).contains("without a confirmed extension");
  }

  @Test
  void sigtermHandsRunningItemsBackAtOnce() throws Exception {
    JarRunner t = new JarRunner(dir);
    long id = id(t.run("enqueue", "--", "sh", "-c", "echo started; sleep 30"));
    JarRunner.Proc w = t.start("worker", "--visibility", "10m", "--kill-grace", "1s");
    await().atMost(Duration.ofSeconds(30)).until(() -> "in_progress".equals(t.status(id)));
    Thread.sleep(300);
    long start = System.nanoTime();
    JarRunner.term(w);
    int code = w.waitFor(20);
    long tookMs = (System.nanoTime() - start) / 1_000_000;
    assertThat(code).isZero();
    assertThat(tookMs).isLessThan(8000);
    assertThat(t.status(id)).isEqualTo("pending");
    assertThat(t.checkpointKinds(id)).containsExactly("handed_back");
    assertThat(t.column(id, "attempts")).as("a hand-back is not charged").isEqualTo("0");
    long availableAt = Long.parseLong(t.column(id, "available_at"));
    assertThat(Instant.ofEpochMilli(availableAt)).isBefore(Instant.now().plusMillis(1));
    assertThat(t.column(id, "lease_token")).isNull();
  }

  private static String httpGet(String url) throws Exception {
    return httpGet(url, null);
  }

  private static String httpGet(String url, String token) throws Exception {
    java.net.http.HttpClient c = java.net.http.HttpClient.newHttpClient();
    java.net.http.HttpRequest.Builder b = java.net.http.HttpRequest.newBuilder(java.net.URI.create(url));
    if (token != null) {
      b.header("X-Tether-Token", token);
    }
    java.net.http.HttpResponse<String> r = c.send(b.build(), java.net.http.HttpResponse.BodyHandlers.ofString());
    return r.statusCode() + " " + r.body();
  }

  /** The random dashboard token a process printed, or null. */
  private static String tokenFrom(JarRunner.Proc p) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("dashboard token: ([0-9a-f]{32})").matcher(p.out());
    return m.find() ? m.group(1) : null;
  }

  private static int portFrom(JarRunner.Proc p) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("dashboard: http://127\\.0\\.0\\.1:(\\d+)/").matcher(p.out());
    return m.find() ? Integer.parseInt(m.group(1)) : -1;
  }

  @Test
  void workerServesHealthMetricsAndTheDashboardOnItsHealthPort() throws Exception {
    JarRunner t = new JarRunner(dir);
    long id = id(t.run("enqueue", "--", "sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do echo $i; sleep 0.3; done"));
    JarRunner.Proc w = t.start(JarRunner.shortLeaseWorker("--health-port", "0", "--store-metrics"));
    try {
      await().atMost(Duration.ofSeconds(30)).until(() -> portFrom(w) > 0);
      String base = "http://127.0.0.1:" + portFrom(w);
      await().atMost(Duration.ofSeconds(10)).until(() -> httpGet(base + "/health/ready").startsWith("200"));
      assertThat(httpGet(base + "/health/live")).startsWith("200");
      awaitStatus(t, id, "completed", 30, w);
      // the store gauges of a queue appear from the scrape after the read that found it
      await().atMost(Duration.ofSeconds(30)).until(() -> httpGet(base + "/metrics")
          .matches("(?s).*tether_queue_items\\{queue=\"default\",status=\"completed\"} 1(\\.0)?\n.*"));
      String metrics = httpGet(base + "/metrics");
      assertThat(metrics).startsWith("200")
          .containsPattern("tether_queue_items\\{queue=\"default\",status=\"completed\"} 1(\\.0)?\n")
          .containsPattern("tether_commands_succeeded_total 1(\\.0)?\n")
          .contains("tether_loop_heartbeat_age_seconds{loop=\"w1\"}");
      assertThat(metrics).containsPattern("tether_lease_extensions_total\\{queue=\"default\",type=\"none\"} [1-9]");
      assertThat(httpGet(base + "/")).startsWith("200").contains("Tether dashboard");
      java.util.regex.Matcher token = java.util.regex.Pattern.compile(
          "dashboard token: ([0-9a-f]{32}) \\(reads, requeue and cancel need it; or open "
              + java.util.regex.Pattern.quote(base) + "/#token=\\1;").matcher(w.out());
      assertThat(token.find()).as(w.out()).isTrue();
      assertThat(httpGet(base + "/api/state")).startsWith("401");
      assertThat(httpGet(base + "/api/state", token.group(1))).startsWith("200");
    } finally {
      JarRunner.term(w);
      w.waitFor(20);
    }
  }

  @Test
  void serveAnswersTheApiWithoutWorkers() throws Exception {
    JarRunner t = new JarRunner(dir);
    t.run("enqueue", "--queue", "q1", "--", "true");
    JarRunner.Proc s = t.start("serve", "--port", "0");
    try {
      await().atMost(Duration.ofSeconds(30)).until(() -> portFrom(s) > 0);
      await().atMost(Duration.ofSeconds(30)).until(() -> tokenFrom(s) != null);
      String state = httpGet("http://127.0.0.1:" + portFrom(s) + "/api/state", tokenFrom(s));
      assertThat(state).startsWith("200").contains("\"pending\":{\"n\":1,").contains("\"queue\":\"q1\"");
    } finally {
      JarRunner.term(s);
      assertThat(s.waitFor(20)).isZero();
    }
  }

  @Test
  void serveReadinessFollowsAPostgresDatabaseGoingAwayAndComingBack() throws Exception {
    // Without workers nothing else calls the store: readiness must probe it (it said 200 always).
    try (dev.tether.jdbc.PostgresTestSchema schema = new dev.tether.jdbc.PostgresTestSchema("tether_cli_");
        dev.tether.jdbc.TcpProxy proxy = new dev.tether.jdbc.TcpProxy(schema.url())) {
      JarRunner t = new JarRunner(dir, proxy.url(schema.url()));
      t.run("enqueue", "--", "true"); // serve only reads: the store must exist
      JarRunner.Proc s = t.start("serve", "--port", "0");
      try {
        await().atMost(Duration.ofSeconds(30)).until(() -> portFrom(s) > 0 || !s.process.isAlive());
        assertThat(s.process.isAlive()).as("serve died at start: %s", s.err()).isTrue();
        String ready = "http://127.0.0.1:" + portFrom(s) + "/health/ready";
        assertThat(httpGet(ready)).startsWith("200");

        proxy.cut();
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200))
            .until(() -> httpGet(ready).startsWith("503"));
        proxy.restore();
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200))
            .until(() -> httpGet(ready).startsWith("200"));
      } finally {
        JarRunner.term(s);
        assertThat(s.waitFor(20)).isZero();
      }
    }
  }

  @Test
  void demoRunsToItsSummaryInUnderAMinute() throws Exception {
    JarRunner t = new JarRunner(dir);
    long start = System.nanoTime();
    JarRunner.Proc demo = t.start("demo", "--dir", dir.toString());
    int code = demo.waitFor(70);
    long took = (System.nanoTime() - start) / 1_000_000_000;
    assertThat(code).as(demo.err()).isZero();
    assertThat(took).isLessThan(60);
    String out = demo.out();
    assertThat(out).contains("dashboard: http://127.0.0.1:")
        .contains("lease extended")
        .contains("stall detected")
        .contains("redelivered")
        .contains("retry scheduled")
        .contains("dead-lettered")
        .contains("summary")
        .contains("totals: {completed=6, failed=1}");
  }
}
