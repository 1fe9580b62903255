package dev.tether.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.LeaseExtenderConfig;
import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.TestDatabase;
import dev.tether.jdbc.TetherStore;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.mailbox.Message;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * An agent run on a durable queue whose worker process is killed with SIGKILL (a real child JVM,
 * {@link Process#destroyForcibly()}) after tool call k: once its lease runs out, the next delivery
 * resumes from the checkpointed conversation at tool call k+1 and asks the model nothing it had
 * already answered. Real time, short leases, Awaitility with generous bounds.
 */
abstract class KillNineCompatibilityTest {
  /** Visibility 3 s; beats extend by 2 s at most every 0.2 s; long polls of 0.5 s. */
  static final MainLoopConfig CONFIG = MainLoopConfig.builder()
      .visibilityTimeout(Duration.ofSeconds(3))
      .leaseExtender(LeaseExtenderConfig.of(Duration.ofMillis(200), Duration.ofSeconds(2)))
      .waitTime(Duration.ofMillis(500))
      .build();

  private TestDatabase db;
  private Path dir;
  private Process child;
  private TetherStore store;

  /** This engine's fresh database. */
  protected abstract TestDatabase newDatabase();

  @BeforeEach
  void open() throws IOException {
    db = newDatabase();
    dir = Files.createTempDirectory("tether-agents-kill9");
    store = TetherStore.open(db.url());
  }

  @AfterEach
  void close() throws IOException {
    if (child != null) {
      child.destroyForcibly();
    }
    store.close();
    db.close();
    try (var files = Files.list(dir)) {
      files.forEach(f -> f.toFile().delete());
    }
    Files.deleteIfExists(dir);
  }

  @Test
  void aRunKilledAfterToolCallTwoResumesAtToolCallThreeWithItsMemory() throws Exception {
    int k = 2;
    JdbcMailbox<String, String> tasks = JdbcMailbox.ofStrings(store, "agent-tasks");
    JdbcMailbox<String, String> results = JdbcMailbox.ofStrings(store, "agent-results");
    Path record = dir.resolve("record.txt");
    Path childLog = dir.resolve("child.log");
    String id = tasks.send("fix issue 18", results);

    // the child's model call after tool call k never returns: it is killed there
    child = spawn(record, childLog, k);
    await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
        .failFast("the child exited", () -> !child.isAlive())
        .until(() -> lines(record).contains("asked " + k + " 1"));
    child.destroyForcibly(); // SIGKILL: no shutdown hook, no hand-back, no release
    assertThat(child.waitFor(10, TimeUnit.SECONDS)).isTrue();

    List<String> first = lines(record);
    assertThat(first).as("the killed delivery, in order; child log:\n%s", read(childLog))
        .containsExactly(
            "checkpoint 1 1", // the task
            "asked 0 1", "answered 0 1", "checkpoint 2 1", "checkpoint 3 1", "tool search 1", // a result is checkpointed as its tool ends
            "asked 1 1", "answered 1 1", "checkpoint 4 1", "checkpoint 5 1", "tool read 1",
            "asked 2 1"); // in flight when killed

    List<AgentRun> runs = new CopyOnWriteArrayList<>();
    List<String> completed = new CopyOnWriteArrayList<>();
    MainLoop<String, String> survivor = MainLoop.builder(
            "survivor", tasks, new RecordedAgent(record, -1).handler(runs))
        .config(CONFIG)
        .listener(new MainLoop.Listener() {
          @Override
          public void completed(Message<?, ?> message, Duration took) {
            completed.add(message.id());
          }
        })
        .build();
    Thread thread = new Thread(survivor::run, "survivor");
    thread.start();
    List<Message<String, String>> answers = new ArrayList<>();
    try {
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
          .until(() -> {
            answers.addAll(results.receive(10, Duration.ofSeconds(30), Duration.ZERO));
            return !answers.isEmpty();
          });
    } finally {
      survivor.shutdown();
      thread.join(10_000);
    }

    assertThat(completed).containsExactly(id);
    assertThat(answers).extracting(Message::body).containsExactly("done: fix issue 18");
    answers.forEach(Message::acknowledge);
    assertThat(runs).singleElement().satisfies(run -> {
      assertThat(run.resumed()).as("started from the killed delivery's checkpoint").isTrue();
      assertThat(run.context().deliveryCount()).isEqualTo(2);
      assertThat(run.modelCalls()).as("steps k..N only").isEqualTo(RecordedAgent.TOOLS.size() + 1 - k);
    });
    List<String> second = lines(record).subList(first.size(), lines(record).size());
    assertThat(second).filteredOn(l -> l.startsWith("asked "))
        .as("no model call before step k is repeated; step k was in flight at the kill")
        .containsExactly("asked 2 2", "asked 3 2", "asked 4 2");
    assertThat(second).filteredOn(l -> l.startsWith("tool "))
        .as("resumes at tool call k+1")
        .containsExactly("tool edit 2", "tool test 2");
    List<String> all = lines(record);
    for (int step = 0; step <= RecordedAgent.TOOLS.size(); step++) {
      int s = step;
      assertThat(all).filteredOn(l -> l.startsWith("answered " + s + " ")).as("step %d", s).hasSize(1);
    }
    for (String tool : RecordedAgent.TOOLS) {
      assertThat(all).filteredOn(l -> l.startsWith("tool " + tool + " ")).as(tool).hasSize(1);
    }
    assertThat(tasks.approximateCount()).isZero();
  }

  private Process spawn(Path record, Path log, int hangAtStep) throws IOException {
    Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
    List<String> cmd = List.of(java.toString(), "-Xmx128m", "-XX:TieredStopAtLevel=1",
        "-cp", System.getProperty("java.class.path"), AgentWorkerMain.class.getName(),
        db.url(), record.toString(), Integer.toString(hangAtStep));
    return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
  }

  private static List<String> lines(Path file) throws IOException {
    return Files.exists(file) ? Files.readAllLines(file, StandardCharsets.UTF_8) : List.of();
  }

  private static String read(Path file) throws IOException {
    return Files.exists(file) ? Files.readString(file) : "(none)";
  }
}
