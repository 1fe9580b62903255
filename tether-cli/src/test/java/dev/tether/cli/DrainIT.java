package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.TetherStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code tether worker --drain-timeout} with real processes on a SQLite store: on SIGTERM the worker
 * takes no new item, its running command goes on with its lease extended (readiness 503, liveness
 * 200) and completes, and the worker exits 0 after it; a command still running when the drain ends
 * is killed and its item handed back, not charged, with its checkpoint, and another worker
 * resumes it; a second SIGTERM ends the drain at once. Commands wait on a file, not on a clock.
 */
@Timeout(180)
class DrainIT {
  @TempDir Path dir;

  /**
   * Lease 8 s, extended by 5 s at most every 500 ms (room for slow round trips on a loaded
   * machine); a drain keeps the lease only through extensions, which the tests watch.
   */
  private static final List<String> FAST = List.of(
    "--visibility", "8s", "--extend-every", "500ms", "--extension", "5s", "--kill-grace", "1s",
    "--sweep-every", "1s");

  private static String[] worker(String... extra) {
    return JarRunner.worker(FAST, extra);
  }

  /** The item's lease expiry (epoch ms), or -1 while the store is locked or without a lease. */
  private static long expiry(JarRunner t, long id) throws java.sql.SQLException {
    String v = t.column(id, "lease_expires_at");
    return v == null ? -1 : Long.parseLong(v);
  }

  private static long id(String out) {
    return Long.parseLong(out.strip());
  }

  private static int get(int port, String path) throws Exception {
    HttpRequest r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(5)).build();
    return HttpClient.newHttpClient().send(r, HttpResponse.BodyHandlers.ofString()).statusCode();
  }

  private static int portFrom(JarRunner.Proc p) {
    Matcher m = Pattern.compile("dashboard: http://127\\.0\\.0\\.1:(\\d+)/").matcher(p.out());
    return m.find() ? Integer.parseInt(m.group(1)) : -1;
  }

  /** A command that prints while it waits for {@code go}, then exits 0; it records its start. */
  private static String waitsFor(Path started, Path go) {
    return "echo $TETHER_DELIVERY >> '" + started + "'; while [ ! -f '" + go + "' ]; do echo waiting;"
        + " sleep 0.2; done; echo done";
  }

  @Test
  void aCommandRunningAtSigtermFinishesWithinALongDrainAndTheWorkerExitsZeroAfterIt()
      throws Exception {
    JarRunner t = new JarRunner(dir);
    Path started = dir.resolve("started");
    Path go = dir.resolve("go");
    long id = id(t.run("enqueue", "--", "sh", "-c", waitsFor(started, go)));
    long queued = id(t.run("enqueue", "--", "sh", "-c", "echo second"));
    JarRunner.Proc w = t.start(worker("--concurrency", "1", "--drain-timeout", "60s",
        "--health-port", "0"));
    await().atMost(Duration.ofSeconds(30)).until(() -> Files.exists(started) && portFrom(w) > 0);
    int port = portFrom(w);
    assertThat(get(port, "/health/ready")).isEqualTo(200);

    JarRunner.term(w);

    await().atMost(Duration.ofSeconds(10)).until(() -> get(port, "/health/ready") == 503);
    assertThat(get(port, "/health/live")).isEqualTo(200);
    long expiryAtSigterm = await().atMost(Duration.ofSeconds(10)).until(() -> expiry(t, id), e -> e > 0);
    // the drain keeps extending the lease, and takes nothing new
    await().during(Duration.ofSeconds(4)).atMost(Duration.ofSeconds(6))
        .until(() -> w.process.isAlive() && "in_progress".equals(t.status(id))
            && t.deliveries(id) == 1 && "pending".equals(t.status(queued)));
    await().atMost(Duration.ofSeconds(10)).until(
        () -> expiry(t, id) >= expiryAtSigterm + 3000);

    Files.writeString(go, "go");

    assertThat(w.waitFor(30)).as(w.err()).isZero();
    assertThat(t.status(id)).isEqualTo("completed");
    assertThat(t.deliveries(id)).isEqualTo(1);
    assertThat(t.checkpointKinds(id)).as("no expiry, no hand-back").isEmpty();
    assertThat(t.status(queued)).as("nothing new was taken during the drain").isEqualTo("pending");
    assertThat(t.deliveries(queued)).isZero();
  }

  @Test
  void aCommandStillRunningWhenAShortDrainEndsIsHandedBackUnchargedWithItsCheckpointAndResumed()
      throws Exception {
    JarRunner t = new JarRunner(dir);
    Path started = dir.resolve("started");
    Path never = dir.resolve("never");
    // the first delivery waits for a file that never comes; the second one finishes at once
    long id = id(t.run("enqueue", "--", "sh", "-c",
        "if [ \"$TETHER_DELIVERY\" -gt 1 ]; then echo resumed; exit 0; fi; " + waitsFor(started, never)));
    JarRunner.Proc w = t.start(worker("--drain-timeout", "2s"));
    await().atMost(Duration.ofSeconds(30)).until(() -> Files.exists(started));
    // the command records its progress, fenced by its lease token (as "$TETHER_CLI" checkpoint)
    try (TetherStore store = TetherStore.open(t.db().toString())) {
      String token = await().atMost(Duration.ofSeconds(10)).until(() -> t.column(id, "lease_token"),
          v -> v != null);
      new LeaseManager(store, "command").checkpoint(id, Long.parseLong(token),
          "step-3".getBytes(StandardCharsets.UTF_8));
    }

    long t0 = System.nanoTime();
    JarRunner.term(w);
    int code = w.waitFor(30);
    long tookMs = (System.nanoTime() - t0) / 1_000_000;

    assertThat(code).as(w.err()).isZero();
    System.out.printf("drain 2 s: the worker exited %d ms after SIGTERM%n", tookMs);
    assertThat(tookMs).as("the drain lasted its 2 s").isGreaterThanOrEqualTo(2000);
    assertThat(tookMs).as("and the hand-back followed it within --kill-grace + 5 s").isLessThan(2000 + 6000 + 3000);
    assertThat(t.status(id)).isEqualTo("pending");
    assertThat(t.checkpointKinds(id)).containsExactly("handed_back");
    assertThat(t.column(id, "attempts")).as("a hand-back is not charged").isEqualTo("0");
    assertThat(t.column(id, "lease_token")).isNull();
    try (TetherStore store = TetherStore.open(t.db().toString())) {
      byte[] progress = new LeaseManager(store, "inspector").find(id).orElseThrow().progress();
      assertThat(progress).as("the checkpoint stays with the item").isNotNull();
      assertThat(new String(progress, StandardCharsets.UTF_8)).isEqualTo("step-3");
    }

    JarRunner.Proc second = t.start(worker());
    try {
      await().atMost(Duration.ofSeconds(30)).until(() -> "completed".equals(t.status(id)));
    } finally {
      JarRunner.term(second);
      assertThat(second.waitFor(30)).isZero();
    }
    assertThat(t.deliveries(id)).isEqualTo(2);
    assertThat(t.column(id, "attempts")).isEqualTo("1");
    assertThat(Files.readAllLines(started)).as("the first delivery ran once").containsExactly("1");
  }

  @Test
  void aSecondSigtermEndsTheDrainAtOnce() throws Exception {
    JarRunner t = new JarRunner(dir);
    Path started = dir.resolve("started");
    long id = id(t.run("enqueue", "--", "sh", "-c", waitsFor(started, dir.resolve("never"))));
    JarRunner.Proc w = t.start(worker("--drain-timeout", "10m"));
    await().atMost(Duration.ofSeconds(30)).until(() -> Files.exists(started));

    JarRunner.term(w);
    await().atMost(Duration.ofSeconds(10)).until(() -> w.err().contains("SIGTERM received: stopping"));
    assertThat(w.process.isAlive()).isTrue();
    JarRunner.term(w);

    assertThat(w.waitFor(30)).as(w.err()).isZero(); // far less than the 10-minute drain
    assertThat(w.err()).contains("SIGTERM received again: stopping at once");
    assertThat(t.status(id)).isEqualTo("pending");
    assertThat(t.checkpointKinds(id)).containsExactly("handed_back");
    assertThat(t.column(id, "attempts")).isEqualTo("0");
  }
}
