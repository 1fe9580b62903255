package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The SQLite file's file system fills up while a {@code tether worker} runs (a small tmpfs mounted
 * for the test; needs root or CAP_SYS_ADMIN, otherwise the test is skipped with a message saying
 * so): the worker stays up and logs the failures ({@code SQLITE_FULL}) at a bounded rate (no tight
 * error loop, no crash loop); once space returns it finishes every item, every item ran, and {@code
 * PRAGMA integrity_check} says {@code ok}. It prints what it saw: the log lines by kind, and the
 * readiness probe's answers while the disk was full.
 */
@Timeout(120)
class SqliteDiskFullIT {
  private static final int ITEMS = 60;

  @TempDir Path dir;
  private Path mnt;
  private boolean mounted;

  private static int sh(String... cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    if (!p.waitFor(20, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      return -1;
    }
    return p.exitValue();
  }

  @AfterEach
  void unmount() throws Exception {
    if (mounted) {
      sh("umount", "-l", mnt.toString());
    }
  }

  private Map<String, Long> counts(Path db) throws Exception {
    Map<String, Long> m = new HashMap<>();
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db);
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT status, COUNT(*) FROM tether_work_items GROUP BY status")) {
      while (rs.next()) {
        m.put(rs.getString(1), rs.getLong(2));
      }
    } catch (java.sql.SQLException e) {
      return Map.of(); // busy or full: ask again
    }
    return m;
  }

  private static int portFrom(JarRunner.Proc p) {
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("dashboard: http://127\\.0\\.0\\.1:(\\d+)/").matcher(p.out());
    return m.find() ? Integer.parseInt(m.group(1)) : -1;
  }

  private static int status(java.net.URI uri) {
    try {
      return java.net.http.HttpClient.newHttpClient()
          .send(java.net.http.HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(2)).build(),
              java.net.http.HttpResponse.BodyHandlers.discarding())
          .statusCode();
    } catch (IOException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -2;
    }
  }

  @Test
  void workerSurvivesAFullDiskLogsItAtABoundedRateAndFinishesWhenSpaceReturns() throws Exception {
    mnt = dir.resolve("mnt");
    Files.createDirectories(mnt);
    int rc = sh("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt.toString());
    Assumptions.assumeTrue(rc == 0, "mounting a tmpfs needs root (CAP_SYS_ADMIN); skipped, not failed");
    mounted = true;

    JarRunner t = new JarRunner(dir);
    Path db = mnt.resolve("full.db");
    Path side = dir.resolve("side.log");
    StringBuilder file = new StringBuilder();
    for (int i = 0; i < ITEMS; i++) {
      file.append("sh -c 'echo \"$TETHER_ITEM_ID output line\"; echo $TETHER_ITEM_ID >> ").append(side)
          .append("; sleep 0.1'\n");
    }
    Path commands = dir.resolve("commands.txt");
    Files.writeString(commands, file.toString(), StandardCharsets.UTF_8);
    t.run("enqueue", "--db", db.toString(), "--max-attempts", "10", "--file", commands.toString());

    JarRunner.Proc w = t.start(JarRunner.shortLeaseWorker("--db", db.toString(), "--concurrency", "2",
        "--health-port", "0"));
    try {
      await().atMost(Duration.ofSeconds(30)).until(() -> portFrom(w) > 0 || !w.process.isAlive());
      java.net.URI ready = java.net.URI.create("http://127.0.0.1:" + portFrom(w) + "/health/ready");
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50))
          .until(() -> counts(db).getOrDefault("completed", 0L) >= 10);

      // fill the file system to the last byte
      Path filler = mnt.resolve("filler");
      long filled = 0;
      byte[] chunk = new byte[64 * 1024];
      try (OutputStream o = Files.newOutputStream(filler)) {
        while (true) {
          o.write(chunk);
          filled += chunk.length;
        }
      } catch (IOException full) {
        assertThat(full.getMessage()).containsIgnoringCase("space");
      }
      long fullAtMs = System.currentTimeMillis();
      int errBefore = w.err().length();
      Map<String, Long> atFull = counts(db);
      Map<Integer, Integer> readiness = new java.util.TreeMap<>(); // status -> probes while full
      while (System.currentTimeMillis() - fullAtMs < 6000) {
        readiness.merge(status(ready), 1, Integer::sum);
        Thread.sleep(200);
      }
      Map<String, Long> afterFull = counts(db);
      String duringFull = w.err().substring(errBefore);
      assertThat(w.process.isAlive()).as("worker alive on a full disk; stderr %s", w.err()).isTrue();

      List<String> lines = duringFull.lines().collect(java.util.stream.Collectors.toList());
      long stackLines = lines.stream().filter(l -> l.startsWith("\tat ")).count();
      List<String> logLines = new ArrayList<>();
      for (String l : lines) {
        if (!l.startsWith("\t") && !l.isBlank()) {
          logLines.add(l);
        }
      }
      Map<String, Integer> kinds = new java.util.TreeMap<>();
      for (String l : logLines) {
        // "HH:mm:ss.SSS [thread] LEVEL logger - message": group by level, logger and message start
        String k = l.replaceFirst("^\\S+ \\[[^]]*\\] ", "").replaceAll("\\d+", "N");
        kinds.merge(k.substring(0, Math.min(110, k.length())), 1, Integer::sum);
      }
      kinds.forEach((k, n) -> System.out.printf("  %3d x %s%n", n, k));
      System.out.printf("readiness probes while full (status=count): %s%n", readiness);
      System.out.printf("disk full: %d KiB filler; counts at full %s, 6 s later %s; %d stderr lines"
              + " (%d log lines, %d stack frames) in 6 s%n--- stderr while full (first 40 lines) ---%n%s%n",
          filled / 1024, atFull, afterFull, lines.size(), logLines.size(), stackLines,
          String.join("\n", lines.subList(0, Math.min(40, lines.size()))));

      // space returns
      Files.delete(filler);
      long freedAtMs = System.currentTimeMillis();
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
          .until(() -> counts(db).getOrDefault("completed", 0L) == ITEMS);
      long resumedMs = System.currentTimeMillis() - freedAtMs;
      System.out.printf("disk full for %d ms; all %d items completed %d ms after space returned%n",
          freedAtMs - fullAtMs, ITEMS, resumedMs);
      assertThat(w.process.isAlive()).isTrue();
      // The rate is bounded (each loop retries a failed receive after 1 s, the sweep runs every
      // 1 s): no tight error loop. Each event still carries a full stack trace (MainLoop and
      // RecoverySweep log the cause every time); see docs/RELIABILITY.md.
      long events = logLines.stream().filter(l -> l.contains(" ERROR ") || l.contains(" WARN ")).count();
      assertThat(events).as("errors and warnings in 6 s of full disk").isBetween(1L, 40L);
      assertThat(stackLines).as("stack frames per logged event").isLessThanOrEqualTo(40 * events);
      assertThat(duringFull).contains("SQLITE_FULL");
      // the store reports itself unavailable on SQLITE_FULL, and available once a write works
      assertThat(readiness).as("readiness while the disk was full").containsKey(503);
      assertThat(status(ready)).as("readiness after space returned").isEqualTo(200);
    } finally {
      JarRunner.term(w);
      w.waitFor(20);
    }

    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db);
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("PRAGMA integrity_check")) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getString(1)).isEqualTo("ok");
    }
    Map<String, Long> end = counts(db);
    assertThat(end).containsEntry("completed", (long) ITEMS).hasSize(1);
    List<String> ran = Files.readAllLines(side, StandardCharsets.UTF_8);
    assertThat(new java.util.HashSet<>(ran)).hasSize(ITEMS);
  }
}
