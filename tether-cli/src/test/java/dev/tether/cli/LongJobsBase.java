package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tether.cli.internal.Json;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import dev.tether.jdbc.WorkStatus;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Long jobs through real {@code tether worker} processes on one store (SQLite file in {@link
 * LongJobsIT}, a fresh PostgreSQL schema in {@link PostgresLongJobsIT}): a shell script that
 * resumes from {@code TETHER_CHECKPOINT} and records its steps with {@code "$TETHER_CLI"
 * checkpoint} survives its worker's SIGKILL; a command that prints nothing but beats through
 * {@code "$TETHER_CLI" beat} keeps its lease; {@code tether cancel} of a running {@code sleep
 * 600} ends its process tree and the item {@code cancelled} (the figure is printed for the notes).
 */
@Timeout(180)
abstract class LongJobsBase {
  @TempDir Path dir;

  private TetherStore observer;

  /** The store URL (TETHER_DB) every process of the test uses. */
  abstract String storeUrl();

  /** The engine's name in the printed figures. */
  abstract String engine();

  @AfterEach
  void closeObserver() {
    if (observer != null) {
      observer.close();
    }
  }

  private WorkItem item(long id) {
    if (observer == null) {
      observer = TetherStore.open(storeUrl());
    }
    return new LeaseManager(observer, "test-observer").find(id).orElseThrow();
  }

  private static long id(String out) {
    return Long.parseLong(out.strip());
  }

  /** The script of docs/CLI.md, with its steps logged to a file for the test. */
  private static String resumableScript(Path log) {
    return "last=${TETHER_CHECKPOINT:-0}\n"
        + "echo \"delivery $TETHER_DELIVERY starts after step $last\" >> '" + log + "'\n"
        + "step=$((last + 1))\n"
        + "while [ \"$step\" -le 5 ]; do\n"
        + "  sleep 0.3\n"
        + "  echo \"delivery $TETHER_DELIVERY did step $step\" >> '" + log + "'\n"
        + "  \"$TETHER_CLI\" checkpoint \"$step\" || exit 1\n"
        + "  step=$((step + 1))\n"
        + "done\n";
  }

  @Test
  void scriptCheckpointingThroughTetherCliResumesOnAnotherWorkerAfterItsWorkerIsKilled() throws Exception {
    JarRunner t = new JarRunner(dir, storeUrl());
    Path log = dir.resolve("steps.log");
    Path script = dir.resolve("job.sh");
    Files.writeString(script, resumableScript(log));
    long id = id(t.run("enqueue", "--", "sh", script.toString()));
    // The script's beats are its checkpoints, each a JVM that opens the store (seconds on a loaded
    // machine; echo goes to a file, not to the worker): an 8 s extension leaves a checkpoint about
    // 6 s to come (with 4 s, a second delivery that lost its lease between two slow checkpoints
    // left its last step to a third, in a fresh clone's full build on a 2-core machine).
    String[] worker = {"worker", "--concurrency", "1", "--visibility", "10s", "--extend-every", "500ms",
        "--extension", "8s", "--kill-grace", "1s", "--sweep-every", "1s"};
    JarRunner.Proc first = t.start(worker);
    await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(100))
        .until(() -> progress(id) >= 2);
    JarRunner.kill9(first);
    int kept = progress(id);
    assertThat(item(id).status()).isEqualTo(WorkStatus.IN_PROGRESS);

    JarRunner.Proc second = t.start(worker);
    try {
      await().atMost(Duration.ofSeconds(90)).until(() -> item(id).status() == WorkStatus.COMPLETED);
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      // say what the second worker and the job did, so that a failure on a loaded machine can be read
      throw new AssertionError("item " + id + " not completed by the second worker: " + item(id)
          + "\nsteps: " + (Files.exists(log) ? Files.readAllLines(log, StandardCharsets.UTF_8) : "none")
          + "\nsecond worker's stderr:\n" + second.errTail() + "\nfirst worker's stderr:\n" + first.errTail(), e);
    } finally {
      JarRunner.term(second);
      second.waitFor(30);
    }
    List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
    int resumedAfter = lines.stream().filter(l -> l.startsWith("delivery 2 starts after step "))
        .map(l -> Integer.parseInt(l.substring("delivery 2 starts after step ".length())))
        .findFirst().orElseThrow(() -> new AssertionError("delivery 2 never started: " + lines));
    // the checkpoint a command in flight at the kill may still have written counts too
    assertThat(resumedAfter).isGreaterThanOrEqualTo(kept).isLessThan(5);
    assertThat(lines).startsWith("delivery 1 starts after step 0", "delivery 1 did step 1");
    List<String> second2 = new ArrayList<>();
    for (String l : lines) {
      if (l.startsWith("delivery 2 did step ")) {
        second2.add(l.substring("delivery 2 did ".length()));
      }
    }
    List<String> expected = new ArrayList<>();
    for (int s = resumedAfter + 1; s <= 5; s++) {
      expected.add("step " + s);
    }
    assertThat(second2).as("delivery 2 runs only the steps after its checkpoint").isEqualTo(expected);
    assertThat(lines).doesNotContain("delivery 3 starts after step " + resumedAfter);

    WorkItem done = item(id);
    assertThat(done.deliveryCount()).isEqualTo(2);
    JsonNode json = Json.MAPPER.readTree(t.run("inspect", Long.toString(id), "--json"));
    assertThat(json.get("checkpoint").asText()).isEqualTo("5");
    assertThat(json.get("checkpoint_delivery").asInt()).isEqualTo(2);
    assertThat(json.get("checkpoint_at").isNull()).isFalse();
    List<String> kinds = new ArrayList<>();
    json.get("checkpoints").forEach(c -> kinds.add(c.get("kind").asText()));
    assertThat(kinds).containsExactly("lease_expired", "progress_taken_over");
    assertThat(json.get("checkpoints").get(1).get("reason").asText())
        .startsWith("delivery 2 starts from the progress checkpoint written by delivery 1 at ");
    assertThat(t.run("inspect", Long.toString(id))).contains("progress_taken_over")
        .containsPattern("checkpoint: +5");
  }

  /**
   * Whether a process has ended: gone, or a zombie (it exited; reaping it is its new parent's
   * business, and the init of some containers reaps only every few seconds).
   */
  private static boolean exited(long pid) throws java.io.IOException {
    Path stat = Path.of("/proc/" + pid + "/stat");
    if (!Files.isDirectory(Path.of("/proc/self"))) {
      return ProcessHandle.of(pid).map(h -> !h.isAlive()).orElse(true);
    }
    try {
      String s = Files.readString(stat);
      return s.substring(s.lastIndexOf(')') + 2).startsWith("Z");
    } catch (java.nio.file.NoSuchFileException e) {
      return true;
    }
  }

  private int progress(long id) {
    byte[] p = item(id).progress();
    String text = p == null ? "" : new String(p, StandardCharsets.UTF_8);
    return text.matches("[0-9]+") ? Integer.parseInt(text) : 0;
  }

  @Test
  void silentCommandThatBeatsThroughTetherCliKeepsItsLease() throws Exception {
    JarRunner t = new JarRunner(dir, storeUrl());
    // Silent for 5 × (3 s + a JVM start), at least 15 s, against a 13 s lease: only the beats
    // keep it. Each beat is a JVM that opens the store, seconds on a loaded machine (under the
    // parallel integration tests of a 2-core machine a start took over 3 s, and beats 5 s apart
    // against 10 s extensions then came too late); here a beat may take up to about 7 s: the
    // worker sees it within its 0.5 s probe and extends by 12 s, and stops a command whose lease
    // is left with less than the kill grace and the poll (about 1.4 s).
    long id = id(t.run("enqueue", "--max-attempts", "1", "--", "sh", "-c",
        "for i in 1 2 3 4 5; do sleep 3; \"$TETHER_CLI\" beat || exit 1; done"));
    JarRunner.Proc w = t.start("worker", "--visibility", "13s", "--extend-every", "1s",
        "--extension", "12s", "--kill-grace", "1s", "--sweep-every", "1s");
    try {
      await().atMost(Duration.ofSeconds(90)).until(() -> item(id).status().isFinished());
    } finally {
      JarRunner.term(w);
      w.waitFor(30);
    }
    WorkItem done = item(id);
    assertThat(done.status()).as("error: %s; worker log: %s", done.errorMessage(), w.err())
        .isEqualTo(WorkStatus.COMPLETED);
    assertThat(done.deliveryCount()).isEqualTo(1);
    assertThat(done.checkpoints()).isEmpty();
  }

  @Test
  void checkpointAndBeatThroughALostOrCancelledLeaseExitFourWithOneLineAndWriteNothing() throws Exception {
    JarRunner t = new JarRunner(dir, storeUrl());
    long id = id(t.run("enqueue", "--", "true"));
    item(id); // opens the observer's store
    LeaseManager holder = new LeaseManager(observer, "test-holder");
    dev.tether.jdbc.Lease lease = holder.acquire("default", Duration.ofMinutes(5)).orElseThrow();
    String handle = "TETHER_LEASE=" + id + ":" + Long.toHexString(lease.token());

    JarRunner.Proc ok = t.startWith(List.of("env", handle), "checkpoint", "step 1");
    assertThat(ok.waitFor(60)).as(ok.err()).isZero();
    assertThat(new String(item(id).progress(), StandardCharsets.UTF_8)).isEqualTo("step 1");

    holder.handBack(id, lease.token(), Duration.ZERO);
    JarRunner.Proc lost = t.startWith(List.of("env", handle), "checkpoint", "step 2");
    assertThat(lost.waitFor(60)).isEqualTo(TetherCli.EXIT_LEASE_LOST);
    assertThat(lost.err().strip()).doesNotContain("\n").contains("the lease on item " + id + " is lost");
    assertThat(new String(item(id).progress(), StandardCharsets.UTF_8)).isEqualTo("step 1");

    dev.tether.jdbc.Lease again = holder.acquire("default", Duration.ofMinutes(5)).orElseThrow();
    new dev.tether.jdbc.QueueAdmin(observer).cancel(id, "stop");
    JarRunner.Proc cancelled = t.startWith(
        List.of("env", "TETHER_LEASE=" + id + ":" + Long.toHexString(again.token())), "beat");
    assertThat(cancelled.waitFor(60)).isEqualTo(TetherCli.EXIT_LEASE_LOST);
    assertThat(cancelled.err().strip()).doesNotContain("\n").contains("item " + id + " was cancelled");
  }

  @Test
  void cancelOfARunningSleepEndsItsProcessTreeAndTheItemCancelled() throws Exception {
    JarRunner t = new JarRunner(dir, storeUrl());
    Path pidFile = dir.resolve("sleep.pid");
    // the sleep is the shell's child: the whole tree must go
    long id = id(t.run("enqueue", "--", "sh", "-c",
        "sleep 600 & echo $! > '" + pidFile + "'; wait"));
    JarRunner.Proc w = t.start("worker", "--concurrency", "1");
    try {
      await().atMost(Duration.ofSeconds(60)).until(() -> Files.exists(pidFile) && Files.size(pidFile) > 1);
      long pid = Long.parseLong(Files.readString(pidFile).strip());
      assertThat(ProcessHandle.of(pid)).hasValueSatisfying(h -> assertThat(h.isAlive()).isTrue());

      JarRunner.Proc cancel = t.start("cancel", Long.toString(id), "--reason", "no longer needed");
      assertThat(cancel.waitFor(60)).as(cancel.err()).isZero();
      long committed = System.nanoTime(); // the cancel's transaction committed before it exited
      assertThat(cancel.out()).contains("cancelled item " + id);
      await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
          .until(() -> exited(pid));
      Duration gone = Duration.ofNanos(System.nanoTime() - committed);
      System.out.println("FIGURE " + engine() + ": tether cancel of a running sleep 600: the sleep"
          + " (a grandchild) exited " + gone.toMillis() + " ms after the cancel command ended");
      assertThat(gone).isLessThan(Duration.ofSeconds(10));
      WorkItem cancelled = item(id);
      assertThat(cancelled.status()).isEqualTo(WorkStatus.CANCELLED);
      assertThat(cancelled.errorMessage()).isEqualTo("no longer needed");
      await().atMost(Duration.ofSeconds(10)).until(() -> w.err().contains("was cancelled"));

      JarRunner.Proc again = t.start("cancel", Long.toString(id));
      assertThat(again.waitFor(60)).isEqualTo(TetherCli.EXIT_FAILURE);
      assertThat(again.err()).contains("item " + id + " is cancelled; only pending or in-progress");
    } finally {
      JarRunner.term(w);
      assertThat(w.waitFor(30)).isZero();
    }
    assertThat(item(id).status()).as("its later result is refused").isEqualTo(WorkStatus.CANCELLED);
  }
}
