package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tether.cli.internal.Json;
import dev.tether.cli.internal.Worker;
import dev.tether.cli.internal.WorkerMetrics;
import dev.tether.jdbc.TetherStore;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code tether workers} and the {@code workers} field of {@code stats --json}: the fleet registry. */
class WorkersCommandTest {
  @TempDir Path dir;

  private record Run(int code, String out, String err) {
    JsonNode json() throws Exception {
      return Json.MAPPER.readTree(out);
    }
  }

  private Run tether(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    String[] all = new String[args.length + 2];
    all[0] = args[0];
    all[1] = "--db";
    all[2] = dir.resolve("w.db").toString();
    System.arraycopy(args, 1, all, 3, args.length - 1);
    int code = TetherCli.execute(all, new PrintWriter(out, true), new PrintWriter(err, true));
    return new Run(code, out.toString(), err.toString());
  }

  @Test
  void aRunningWorkerIsListedWithItsProcessAndLeavesTheListWhenItStops() throws Exception {
    assertThat(tether("enqueue", "--queue", "jobs", "--", "true").code()).isZero();
    Run empty = tether("workers");
    assertThat(empty.code()).as(empty.err()).isZero();
    assertThat(empty.out()).contains("(no worker has registered on this store)");
    assertThat(tether("workers", "--json").json()).isEmpty();

    try (TetherStore store = TetherStore.open(dir.resolve("w.db").toString())) {
      Worker worker = new Worker(store, new Worker.Config("jobs", 3, Duration.ofSeconds(30),
          Duration.ofSeconds(5), Duration.ofSeconds(20), Duration.ofSeconds(1), 4096, Duration.ofSeconds(30),
          null), new WorkerMetrics());
      worker.start(null, false);
      try {
        JsonNode list = tether("workers", "--json").json();
        assertThat(list).hasSize(1);
        JsonNode w = list.get(0);
        assertThat(w.get("worker_id").asText()).isEqualTo(worker.workerId());
        assertThat(w.get("pid").asLong()).isEqualTo(ProcessHandle.current().pid());
        assertThat(w.get("queues").get(0).asText()).isEqualTo("jobs");
        assertThat(w.get("loops").asInt()).isEqualTo(3);
        assertThat(w.get("concurrency").asInt()).isEqualTo(3);
        assertThat(w.get("state").asText()).isEqualTo("alive");
        assertThat(w.get("refresh_ms").asLong()).isEqualTo(10_000);
        assertThat(w.get("last_seen_at").asText()).isNotEmpty();
        Run text = tether("workers");
        assertThat(text.out()).contains("WORKER").contains(worker.workerId()).contains("alive").contains("jobs");
        assertThat(tether("stats").out()).contains("workers: 1 alive, 0 gone");
        JsonNode stats = tether("stats", "--json").json();
        assertThat(stats.get("workers")).hasSize(1);
        assertThat(stats.get("workers").get(0).get("worker_id").asText()).isEqualTo(worker.workerId());
      } finally {
        worker.stop(Duration.ofSeconds(10));
      }
    }
    assertThat(tether("workers", "--json").json()).as("a clean stop removes the row").isEmpty();
    assertThat(tether("stats", "--json").json().get("workers")).isEmpty();
  }
}
