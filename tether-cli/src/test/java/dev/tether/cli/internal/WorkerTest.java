package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.QueueAdmin;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The worker in-process over a real SQLite store. */
@Timeout(60)
class WorkerTest {
  @TempDir Path dir;
  private TetherStore store;
  private LeaseManager leases;
  private Worker worker;
  private final WorkerMetrics metrics = new WorkerMetrics();

  @BeforeEach
  void start() {
    store = TetherStore.open(dir.resolve("w.db").toString());
    leases = new LeaseManager(store, "test");
    worker =
        new Worker(store, new Worker.Config("q", 2, Duration.ofSeconds(3), Duration.ofMillis(200),
            Duration.ofSeconds(2), Duration.ofMillis(500), 4096, Duration.ofSeconds(5), null), metrics);
    worker.start(null, false);
  }

  @AfterEach
  void stop() {
    worker.stop(Duration.ofSeconds(5));
    store.close();
  }

  private long enqueue(String script, int maxAttempts) {
    return leases.enqueue(
        NewWorkItem.builder("q")
            .input(new CommandSpec(List.of(script), true, "output", Map.of()).toJson())
            .maxAttempts(maxAttempts)
            .build());
  }

  private String status(long id) {
    return leases.find(id).orElseThrow().status().dbValue();
  }

  @Test
  void successStoresTheResultAndFailureTheLastErrorLine() {
    long ok = enqueue("echo fine; echo warn >&2", 3);
    long bad = enqueue("echo 'no space left' >&2; exit 5", 1);
    await().atMost(Duration.ofSeconds(20)).until(() -> status(ok).equals("completed") && status(bad).equals("failed"));
    CommandResult r = CommandResult.fromJsonOrNull(leases.find(ok).orElseThrow().outputAsString());
    assertThat(r).isNotNull();
    assertThat(r.stdoutTail()).isEqualTo("fine\n");
    assertThat(r.stderrTail()).isEqualTo("warn\n");
    WorkItem b = leases.find(bad).orElseThrow();
    assertThat(b.errorMessage()).isEqualTo(
        "failed on attempt 1 of 1: exit status 5: no space left\n--- stderr (tail) ---\nno space left");
    assertThat(CommandResult.firstLine(b.errorMessage()))
        .isEqualTo("failed on attempt 1 of 1: exit status 5: no space left");
    assertThat(b.checkpoints()).extracting(c -> c.kind()).containsExactly("dead_lettered");
    assertThat(b.attempts()).isEqualTo(1);
    assertThat(metrics.succeeded.sum()).isEqualTo(1);
    assertThat(metrics.failed.sum()).isEqualTo(1);
  }

  @Test
  void cancellingARunningItemKillsItsCommandAndTheCancelStands() {
    Path marker = dir.resolve("finished");
    long id = enqueue("for i in $(seq 1 40); do echo $i; sleep 0.1; done; touch '" + marker + "'", 3);
    await().atMost(Duration.ofSeconds(20)).until(() -> status(id).equals("in_progress"));
    assertThat(new QueueAdmin(store).cancel(id, "cancelled by test")).isTrue();
    // leaseLost is reported after the runner has killed the process tree: the shell that would
    // touch the marker is gone, so the marker can never appear
    await().atMost(Duration.ofSeconds(10)).until(() -> metrics.leasesLost.sum() == 1);
    assertThat(Files.exists(marker)).isFalse();
    WorkItem w = leases.find(id).orElseThrow();
    assertThat(w.status().dbValue()).isEqualTo("cancelled");
    assertThat(w.errorMessage()).isEqualTo("cancelled by test");
    assertThat(w.output()).isNull();
  }
}
