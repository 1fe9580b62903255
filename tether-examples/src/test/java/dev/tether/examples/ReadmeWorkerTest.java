package dev.tether.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.LeaseExtenderConfig;
import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkStatus;
import dev.tether.loop.LoopGroup;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.loop.WorkContext;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the README's "A worker in 20 lines" as written (only the file path and the way the group
 * is started and stopped differ): its "test" step fails once, and the next delivery resumes after
 * the last checkpointed step instead of starting over.
 */
class ReadmeWorkerTest {

  private static final List<String> STEPS = List.of("checkout", "build", "test", "publish");

  private final List<String> ran = new CopyOnWriteArrayList<>();
  private final AtomicBoolean failedOnce = new AtomicBoolean();

  private void run(String job, String step) {
    ran.add(step);
    if (step.equals("test") && failedOnce.compareAndSet(false, true)) {
      throw new IllegalStateException(job + ": a flaky test step");
    }
  }

  @Test
  void theReadmeWorkerResumesAfterItsLastCheckpoint(@TempDir Path dir) throws Exception {
    try (TetherStore store = TetherStore.open(dir.resolve("jobs.db").toString())) {
      // --- as in the README
      JdbcMailbox<String, String> jobs = JdbcMailbox.ofStrings(store, "builds");
      String id = jobs.send("release-42");
      MainLoop<String, String> worker = MainLoop.builder("builds", jobs, (String job, WorkContext ctx) -> {
            int done = ctx.lastCheckpointAsString().map(Integer::parseInt).orElse(0); // resume
            for (int step = done; step < STEPS.size(); step++) {
              run(job, STEPS.get(step));                  // real work ...
              ctx.checkpoint(Integer.toString(step + 1)); // ... recorded through the lease (also a beat)
            }
            return job + " published";
          })
          .config(MainLoopConfig.builder()
              .visibilityTimeout(Duration.ofMinutes(30))                         // first lease
              .leaseExtender(LeaseExtenderConfig.of(Duration.ofMinutes(1),       // extend at most once a minute,
                                                    Duration.ofMinutes(5)))      // each time to now + 5 min
              .build())
          .build();
      // --- end; the README runs the group until SIGTERM
      LoopGroup group = LoopGroup.builder().loop(worker).noHealthServer().handleSignals(false).build();
      Thread thread = new Thread(group::run, "readme-worker");
      thread.start();
      LeaseManager leases = new LeaseManager(store, "readme-test");
      await().atMost(60, TimeUnit.SECONDS)
          .until(() -> leases.find(Long.parseLong(id)).orElseThrow().status() == WorkStatus.COMPLETED);
      group.shutdown();
      thread.join(TimeUnit.SECONDS.toMillis(30));

      assertThat(ran).containsExactly("checkout", "build", "test", "test", "publish");
      assertThat(leases.find(Long.parseLong(id)).orElseThrow().deliveryCount()).isEqualTo(2);
    }
  }
}
