package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.health.Watchdog;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.ZoneId;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A worker whose command hangs without output, through the real jar: readiness fails first, then
 * the watchdog ends the worker process with SIGKILL, exit status 137 (CRITICAL line and thread dump on
 * stderr), and a second worker completes the item once its lease has expired.
 *
 * <p>Timeouts: watchdog 3 s (readiness fails at 90% of it, 2.7 s), lease 8 s so that only the
 * watchdog acts on the hung command (calibration: visibility 8 s &gt; watchdog 3 s; watchdog 3 s
 * &gt; long poll 1 s; check interval 750 ms &lt; 1 s).
 */
@Timeout(90)
class WatchdogIT {
  private static final long WATCHDOG_MS = 3000;

  @TempDir Path dir;

  private static int portFrom(JarRunner.Proc p) {
    Matcher m = Pattern.compile("dashboard: http://127\\.0\\.0\\.1:(\\d+)/").matcher(p.out());
    return m.find() ? Integer.parseInt(m.group(1)) : -1;
  }

  @Test
  void hungCommandFailsReadinessThenTheWatchdogEndsTheWorkerAndASecondWorkerCompletesTheItem()
      throws Exception {
    JarRunner t = new JarRunner(dir);
    Path started = dir.resolve("started");
    Path pidFile = dir.resolve("hung.pid");
    JarRunner.Proc hung =
        t.start("worker", "--concurrency", "2", "--visibility", "8s", "--extension", "4s",
            "--extend-every", "1s", "--kill-grace", "1s", "--sweep-every", "1s",
            "--watchdog", WATCHDOG_MS + "ms", "--health-port", "0");
    AtomicLong exitedAtMs = new AtomicLong();
    hung.process.onExit().thenRun(() -> exitedAtMs.set(System.currentTimeMillis()));
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
    await().atMost(Duration.ofSeconds(30)).until(() -> portFrom(hung) > 0 || !hung.process.isAlive());
    assertThat(hung.process.isAlive()).as("worker died at start: %s", hung.err()).isTrue();
    URI ready = URI.create("http://127.0.0.1:" + portFrom(hung) + "/health/ready");
    await().atMost(Duration.ofSeconds(10)).ignoreExceptions()
        .until(() -> http.send(HttpRequest.newBuilder(ready).build(), HttpResponse.BodyHandlers.ofString())
            .statusCode() == 200);

    // the command hangs silently on its first delivery only
    long id = Long.parseLong(t.run("enqueue", "--max-attempts", "3", "--", "sh", "-c",
        "if [ \"$TETHER_DELIVERY\" = 1 ]; then date +%s%N > " + started + "; echo $$ > " + pidFile
            + "; exec sleep 60; fi; echo finished on delivery $TETHER_DELIVERY").strip());

    // poll readiness until the process is gone
    AtomicLong first503AtMs = new AtomicLong();
    AtomicLong last200AtMs = new AtomicLong();
    AtomicInteger probes = new AtomicInteger();
    while (hung.process.isAlive()) {
      try {
        int code = http.send(HttpRequest.newBuilder(ready).timeout(Duration.ofSeconds(1)).build(),
            HttpResponse.BodyHandlers.ofString()).statusCode();
        long now = System.currentTimeMillis();
        probes.incrementAndGet();
        if (code == 503 && first503AtMs.get() == 0 && Files.exists(started)) {
          first503AtMs.set(now);
        } else if (code == 200) {
          last200AtMs.set(now);
        }
      } catch (java.io.IOException e) {
        // the process is going away: the loop condition ends it
      }
      Thread.sleep(20);
    }
    int code = hung.waitFor(10);
    await().atMost(Duration.ofSeconds(5)).until(() -> exitedAtMs.get() != 0);
    long startedAtMs =
        Long.parseLong(Files.readString(started, StandardCharsets.UTF_8).strip()) / 1_000_000;
    String err = hung.err();
    assertThat(code).as("exit status (stderr: %s)", err).isEqualTo(Watchdog.KILLED_EXIT_STATUS);
    assertThat(err)
        .contains("CRITICAL: watchdog: loop 'w")
        .contains("stalled: no heartbeat for")
        .contains("CRITICAL: watchdog: terminating the process because of stalled loops")
        .contains("thread dump follows")
        .contains("\"tether-loop-w1\"")
        .contains("\"tether-loop-w2\"");

    // The stall counts from the loop's last beat, which comes before the command starts by the
    // time the loop takes to receive the item and start the command (more on a loaded machine):
    // the timings are measured from that beat, which the verdict gives (its log time minus the
    // silence it reports). Log times are the worker's wall clock, time of day in the local zone.
    String logTime =
        "(\\d\\d:\\d\\d:\\d\\d\\.\\d{3}) \\[[^]]*\\] ERROR \\S+ - CRITICAL: watchdog: ";
    Matcher verdict =
        Pattern.compile(logTime + "loop '[^']+' stalled: no heartbeat for (\\d+) ms").matcher(err);
    assertThat(verdict.find()).as("the watchdog's verdict line (stderr: %s)", err).isTrue();
    long silentMs = Long.parseLong(verdict.group(2));
    long lastBeatAtMs = logTimeToEpochMs(verdict.group(1), startedAtMs) - silentMs;
    Matcher last = Pattern.compile(logTime + "terminating").matcher(err);
    long terminatingAfterMs =
        last.find() ? logTimeToEpochMs(last.group(1), startedAtMs) - lastBeatAtMs : -1;
    long beatToExitMs = exitedAtMs.get() - lastBeatAtMs;
    long beatToReadinessFailedMs = first503AtMs.get() - lastBeatAtMs;
    System.out.printf(
        "watchdog %d ms: last beat %d ms before the command started; from the last beat: readiness"
            + " 503 after %d ms (last 200 at %d ms), verdict after %d ms, 'terminating' logged"
            + " after %d ms, worker exit after %d ms; %d probes; exit status %d%n",
        WATCHDOG_MS, startedAtMs - lastBeatAtMs, beatToReadinessFailedMs,
        last200AtMs.get() - lastBeatAtMs, silentMs, terminatingAfterMs, beatToExitMs,
        probes.get(), code);

    assertThat(silentMs).as("the verdict's silence").isBetween(WATCHDOG_MS, WATCHDOG_MS + 2000);
    assertThat(beatToExitMs).isBetween(WATCHDOG_MS, WATCHDOG_MS + 2000);
    assertThat(first503AtMs.get()).as("readiness went 503 while the worker was alive").isPositive();
    assertThat(first503AtMs.get()).isLessThan(exitedAtMs.get());
    assertThat(beatToReadinessFailedMs)
        .as("readiness fails at 90 percent of the threshold after the last beat")
        .isGreaterThanOrEqualTo(WATCHDOG_MS * 9 / 10 - 300);

    // the hung command outlived its worker (halt runs no cleanup); end it
    long hungPid = Long.parseLong(Files.readString(pidFile, StandardCharsets.UTF_8).strip());
    ProcessHandle.of(hungPid).ifPresent(ProcessHandle::destroyForcibly);

    assertThat(t.status(id)).isEqualTo("in_progress");
    JarRunner.Proc second =
        t.start(JarRunner.shortLeaseWorker());
    try {
      await().atMost(Duration.ofSeconds(40)).until(() -> "completed".equals(t.status(id)));
    } finally {
      JarRunner.term(second);
      second.waitFor(20);
    }
    assertThat(t.deliveries(id)).isEqualTo(2);
    assertThat(t.checkpointKinds(id)).containsExactly("lease_expired");
    assertThat(t.run("inspect", Long.toString(id), "--json")).contains("finished on delivery 2");
  }

  /**
   * Turns a log time of day ({@code HH:mm:ss.SSS}, the worker's local zone) into epoch
   * milliseconds, taking the date from {@code nearMs} (the nearest such instant to it).
   */
  private static long logTimeToEpochMs(String timeOfDay, long nearMs) {
    ZoneId zone = ZoneId.systemDefault();
    LocalDate day = Instant.ofEpochMilli(nearMs).atZone(zone).toLocalDate();
    long best = Long.MAX_VALUE;
    for (LocalDate d : new LocalDate[] {day.minusDays(1), day, day.plusDays(1)}) {
      long ms = LocalTime.parse(timeOfDay).atDate(d).atZone(zone).toInstant().toEpochMilli();
      if (best == Long.MAX_VALUE || Math.abs(ms - nearMs) < Math.abs(best - nearMs)) {
        best = ms;
      }
    }
    return best;
  }
}
