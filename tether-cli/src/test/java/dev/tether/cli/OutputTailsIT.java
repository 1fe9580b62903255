package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The output an operator needs when a job hangs, through the real jar: a delivery's output tails
 * survive its end (here an expired lease), a running item's latest output is visible, and {@code
 * tether logs} prints it, once or as it arrives.
 */
@Timeout(120)
class OutputTailsIT {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  // a 10 s lease, so that a command that starts late on a loaded machine still prints in time;
  // 5 s extensions, so that the output of a stream read after the first extension is written
  // before the lease runs out: with 2 s, a starved worker (a build running other modules beside
  // these tests) lost a hung job's stdout written after its stderr
  private static final String[] WORKER = {
    "worker", "--visibility", "10s", "--extend-every", "500ms", "--extension", "5s",
    "--kill-grace", "1s", "--sweep-every", "1s"
  };

  @Test
  void aHungJobKeepsItsOutputAfterItsLeaseExpired() throws Exception {
    JarRunner t = new JarRunner(dir);
    long id = Long.parseLong(t.run("enqueue", "--max-attempts", "1", "--", "sh", "-c",
        "echo connecting...; echo step 1 done >&2; sleep 600").strip());
    JarRunner.Proc w = t.start(WORKER);
    try {
      await().atMost(Duration.ofSeconds(60)).until(() -> "failed".equals(t.status(id)));
    } finally {
      JarRunner.term(w);
      w.waitFor(20);
    }
    JsonNode item = JSON.readTree(t.run("inspect", Long.toString(id), "--json"));
    assertThat(item.get("result").isNull()).isTrue();
    JsonNode delivery = item.get("deliveries").get(0);
    assertThat(delivery.get("outcome").asText()).isEqualTo("lease_expired");
    assertThat(delivery.get("stdout_tail").asText()).isEqualTo("connecting...\n");
    // the shell may add "Terminated" when the worker kills its sleep before the lease runs out
    assertThat(delivery.get("stderr_tail").asText()).startsWith("step 1 done\n");

    String table = t.run("inspect", Long.toString(id));
    assertThat(table).contains("--- stdout (tail) of delivery 1, lease_expired ---\nconnecting...")
        .contains("--- stderr (tail) of delivery 1, lease_expired ---\nstep 1 done");

    JarRunner.Proc logs = t.start("logs", Long.toString(id));
    assertThat(logs.waitFor(60)).as(logs.err()).isZero();
    assertThat(logs.out()).isEqualTo("connecting...\n");
    assertThat(logs.err()).startsWith("step 1 done\n");
  }

  @Test
  void aRunningJobsOutputIsVisibleAndLogsFollowPrintsItAsItArrives() throws Exception {
    JarRunner t = new JarRunner(dir);
    // prints a line every half second until the test has seen it running (at least 8 lines):
    // each inspect below starts a JVM, which on a loaded machine took longer than a fixed run
    Path seen = dir.resolve("seen-running");
    long id = Long.parseLong(t.run("enqueue", "--", "sh", "-c",
        "i=0; while [ $i -lt 8 ] || [ ! -f '" + seen + "' ]; do i=$((i+1)); echo line $i; sleep 0.5;"
            + " done; echo finished >&2").strip());
    JarRunner.Proc follow = t.start("logs", "--follow", "--interval", "200ms", Long.toString(id));
    JarRunner.Proc w = t.start(WORKER);
    try {
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).until(() -> {
        JsonNode item = JSON.readTree(t.run("inspect", Long.toString(id), "--json"));
        return "in_progress".equals(item.get("status").asText())
            && item.get("output").get("stdout_tail").asText("").contains("line 2")
            && item.get("deliveries").get(0).get("stdout_tail").asText("").contains("line 2");
      });
      java.nio.file.Files.createFile(seen);
      assertThat(follow.waitFor(60)).as(follow.err()).isZero();
    } finally {
      JarRunner.term(w);
      w.waitFor(20);
    }
    assertThat(t.status(id)).isEqualTo("completed");
    // every line once, in order, nothing skipped: line 1 to line n, n at least 8
    String[] lines = follow.out().split("\n", -1);
    assertThat(lines.length).as(follow.out()).isGreaterThanOrEqualTo(9);
    StringBuilder expected = new StringBuilder();
    for (int i = 1; i < lines.length; i++) {
      expected.append("line ").append(i).append('\n');
    }
    assertThat(follow.out()).isEqualTo(expected.toString());
    assertThat(follow.err()).isEqualTo("finished\n");
  }
}
