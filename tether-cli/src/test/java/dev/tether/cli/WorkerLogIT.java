package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The worker's log says what happened, through the real jar: an ordinary command failure is one
 * line, the last attempt says it dead-lettered the item (not that it retries), and the
 * configuration shows durations as the options take them.
 */
@Timeout(120)
class WorkerLogIT {
  @TempDir Path dir;

  @Test
  void aFailingCommandIsOneLinePerAttemptAndItsLastAttemptSaysDeadLettered() throws Exception {
    JarRunner t = new JarRunner(dir);
    long id = Long.parseLong(t.run("enqueue", "--max-attempts", "2", "--", "sh", "-c",
        "echo some output; echo bad thing >&2; exit 3").strip());
    JarRunner.Proc w = t.start("worker", "--visibility", "90s", "--extend-every", "500ms",
        "--extension", "4s", "--kill-grace", "1s", "--sweep-every", "1m30s");
    try {
      await().atMost(Duration.ofSeconds(60)).until(() -> "failed".equals(t.status(id)));
    } finally {
      JarRunner.term(w);
      w.waitFor(20);
    }
    List<String> lines = w.err().lines().collect(Collectors.toList());
    List<String> failures = lines.stream()
        .filter(l -> l.contains("message " + id + " ")).collect(Collectors.toList());
    assertThat(failures).hasSize(2);
    assertThat(failures.get(0))
        .contains("message " + id + " failed on attempt 1 of 2; retrying after 1s: exit status 3: bad thing");
    assertThat(failures.get(1))
        .contains("message " + id + " dead-lettered after attempt 2 of 2")
        .contains("exit status 3: bad thing")
        .doesNotContain("retrying");
    assertThat(lines).noneMatch(l -> l.startsWith("--- stderr") || l.startsWith("--- stdout")
        || l.startsWith("\tat ") || l.contains("CommandFailedException"));
    assertThat(w.err()).doesNotContainPattern("PT[0-9]")
        .contains("visibility=90s").contains("extendEvery=500ms").contains("sweepInterval=90s");
  }
}
