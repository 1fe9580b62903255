package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.jdbc.PostgresTestSchema;
import dev.tether.jdbc.TcpProxy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Exit statuses a supervisor sees from the long-running commands, through the real jar: 0 after a
 * clean stop on SIGTERM (the JVM's own handling said 143 even then), 3 when the shutdown could not
 * finish in time.
 */
@Timeout(120)
class ExitCodeIT {
  @TempDir Path dir;

  private static int portFrom(JarRunner.Proc p) {
    Matcher m = Pattern.compile("dashboard: http://127\\.0\\.0\\.1:(\\d+)/").matcher(p.out());
    return m.find() ? Integer.parseInt(m.group(1)) : -1;
  }

  @Test
  void workerStoppedBySigtermWithACommandRunningHandsItBackAndExits0() throws Exception {
    JarRunner t = new JarRunner(dir);
    long id = Long.parseLong(t.run("enqueue", "--", "sh", "-c", "echo started; sleep 30").strip());
    JarRunner.Proc w = t.start("worker", "--visibility", "10m", "--kill-grace", "1s");
    await().atMost(Duration.ofSeconds(30)).until(() -> "in_progress".equals(t.status(id)));
    JarRunner.term(w);
    assertThat(w.waitFor(20)).as("exit status after SIGTERM; stderr: %s", w.err()).isZero();
    assertThat(t.status(id)).isEqualTo("pending");
    assertThat(w.err()).contains("SIGTERM received: stopping");
  }

  @Test
  void idleWorkerStoppedBySigtermExits0() throws Exception {
    JarRunner t = new JarRunner(dir);
    JarRunner.Proc w = t.start("worker", "--health-port", "0");
    await().atMost(Duration.ofSeconds(30)).until(() -> portFrom(w) > 0 || !w.process.isAlive());
    JarRunner.term(w);
    assertThat(w.waitFor(20)).as("exit status after SIGTERM; stderr: %s", w.err()).isZero();
  }

  @Test
  void serveStartedWithSigintIgnoredSaysSoAndStopsOnSigterm() throws Exception {
    // as a script's background job starts: SIGINT ignored, which the JVM keeps
    JarRunner t = new JarRunner(dir);
    t.run("enqueue", "--", "true");
    JarRunner.Proc s = t.startWith(java.util.List.of("/bin/sh", "-c", "trap '' INT; exec \"$@\"", "sh"),
        "serve", "--port", "0");
    try {
      await().atMost(Duration.ofSeconds(30)).until(() -> portFrom(s) > 0 || !s.process.isAlive());
      assertThat(s.err()).contains("SIGINT was ignored when this process started")
          .contains("stop this process with SIGTERM");
    } finally {
      JarRunner.term(s);
    }
    assertThat(s.waitFor(20)).as("exit status after SIGTERM; stderr: %s", s.err()).isZero();
  }

  @Test
  void serveStoppedBySigtermExits0() throws Exception {
    JarRunner t = new JarRunner(dir);
    t.run("enqueue", "--", "true");
    JarRunner.Proc s = t.start("serve", "--port", "0");
    await().atMost(Duration.ofSeconds(30)).until(() -> portFrom(s) > 0 || !s.process.isAlive());
    assertThat(s.process.isAlive()).as("serve died at start: %s", s.err()).isTrue();
    JarRunner.term(s);
    assertThat(s.waitFor(20)).as("exit status after SIGTERM; stderr: %s", s.err()).isZero();
    assertThat(s.err()).contains("Closed Tether store");
  }

  @Test
  void workerWhoseStoreStopsAnsweringDuringShutdownExits3() throws Exception {
    try (PostgresTestSchema schema = new PostgresTestSchema("tether_cli_");
        TcpProxy proxy = new TcpProxy(schema.url())) {
      JarRunner t = new JarRunner(dir, proxy.url(schema.url()));
      t.run("enqueue", "--", "sh", "-c", "echo started; sleep 60");
      JarRunner.Proc w = t.start("worker", "--visibility", "10m", "--kill-grace", "1s");
      await().atMost(Duration.ofSeconds(30)).until(() -> w.out().contains("worker ") || !w.process.isAlive());
      await().atMost(Duration.ofSeconds(30)).until(() -> t.run("ls", "--json").contains("in_progress"));
      proxy.freeze(); // the hand-back can never reach the database
      long start = System.nanoTime();
      JarRunner.term(w);
      int code = w.waitFor(60);
      long tookMs = (System.nanoTime() - start) / 1_000_000;
      assertThat(code).as("exit status; stderr: %s", w.err()).isEqualTo(TetherCli.EXIT_STOP_TIMEOUT);
      assertThat(w.err()).contains("did not finish its shutdown in time: 1 of 2 loops still running");
      // the group's deadline is --kill-grace + 5 s
      assertThat(tookMs).as("exit after the shutdown deadline").isBetween(5500L, 20_000L);
      proxy.restore();
    }
  }
}
