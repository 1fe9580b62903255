package dev.tether.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import dev.tether.jdbc.WorkStatus;
import dev.tether.loop.WorkContext;
import dev.tether.loop.WorkLoop;
import dev.tether.loop.WorkStoppedException;
import dev.tether.spring.TetherHandler;
import dev.tether.spring.TetherQueues;
import dev.tether.spring.TetherWorkers;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Closing the context drains the loops: running work finishes, or is handed back uncharged. */
class TetherShutdownTest {
  @TempDir Path dir;

  /** Works for as many milliseconds as its message says, beating; hands back when interrupted on shutdown. */
  static final class Slow implements TetherHandler<String, String> {
    final CountDownLatch started = new CountDownLatch(1);
    volatile boolean sawShutdownRequest;

    @Override
    public String queue() {
      return "slow";
    }

    @Override
    public String handle(String millis, WorkContext context) throws Exception {
      started.countDown();
      // "until-shutdown": runs until the shutdown request, then finishes 300 ms of work (so the
      // request is seen however slowly the machine gets to closing the context); else millis
      boolean untilShutdown = millis.equals("until-shutdown");
      long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(
          untilShutdown ? TimeUnit.MINUTES.toMillis(5) : Long.parseLong(millis));
      while (System.nanoTime() - end < 0) {
        context.beat();
        if (context.isShutdownRequested() && !sawShutdownRequest) {
          sawShutdownRequest = true;
          if (untilShutdown) {
            end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
          }
        }
        try {
          Thread.sleep(20);
        } catch (InterruptedException e) {
          throw new WorkStoppedException(WorkStoppedException.Reason.SHUTDOWN, "stopping", e);
        }
      }
      return "done";
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class App {
    @Bean
    Slow slow() {
      return new Slow();
    }
  }

  private ApplicationContextRunner runner(Path file) {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(TetherAutoConfiguration.class))
        .withUserConfiguration(App.class)
        .withPropertyValues("tether.store.default-file=" + file, "tether.worker.wait-time=1s");
  }

  /**
   * Spring waits 100 ms for the workers' stop, the workers stop within 1 s: the drain outlives
   * the phase.
   */
  private ApplicationContextRunner shortShutdownPhase(Path file) {
    return runner(file)
        .withConfiguration(AutoConfigurations.of(
            org.springframework.boot.autoconfigure.context.LifecycleAutoConfiguration.class))
        .withPropertyValues("tether.worker.shutdown-timeout=1s",
            "spring.lifecycle.timeout-per-shutdown-phase=100ms");
  }

  /**
   * Sends a job that runs on past any shutdown request (interrupted only), closes the context
   * while it runs, and returns the job's id.
   */
  private static String closeWhileALongJobRuns(ApplicationContextRunner runner) {
    String[] id = new String[1];
    runner.run(context -> {
      Slow slow = context.getBean(Slow.class);
      id[0] = context.getBean(TetherQueues.class).send("slow", "600000");
      assertThat(slow.started.await(30, TimeUnit.SECONDS)).isTrue();
      context.close();
    });
    return id[0];
  }

  private static WorkItem item(Path file, String id) {
    try (TetherStore store = TetherStore.open(file.toString())) {
      return new QueueMonitor(store).item(Long.parseLong(id)).orElseThrow();
    }
  }

  @Test
  void closingTheContextLetsARunningHandlerFinishWithinTheShutdownTimeout() throws Exception {
    Path file = dir.resolve("drain.db");
    String[] id = new String[1];
    Slow[] slow = new Slow[1];
    runner(file).withPropertyValues("tether.worker.shutdown-timeout=30s").run(context -> {
      slow[0] = context.getBean(Slow.class);
      id[0] = context.getBean(TetherQueues.class).send("slow", "until-shutdown");
      assertThat(slow[0].started.await(30, TimeUnit.SECONDS)).isTrue();
      context.close(); // returns once the loops have drained
    });
    assertThat(slow[0].sawShutdownRequest).isTrue();
    WorkItem done = item(file, id[0]);
    assertThat(done.status()).isEqualTo(WorkStatus.COMPLETED);
    assertThat(done.deliveryCount()).isEqualTo(1);
  }

  @Test
  void workStillRunningAtTheShutdownTimeoutIsHandedBackUncharged() throws Exception {
    Path file = dir.resolve("handback.db");
    String id = closeWhileALongJobRuns(runner(file).withPropertyValues("tether.worker.shutdown-timeout=500ms"));
    WorkItem back = item(file, id);
    assertThat(back.status()).isEqualTo(WorkStatus.PENDING);
    assertThat(back.attempts()).as("a hand-back is not charged").isZero();
    assertThat(back.deliveryCount()).isEqualTo(1);
  }

  @Test
  void aShutdownPhaseShorterThanTheShutdownTimeoutStillHandsBackBeforeTheStoreCloses() throws Exception {
    // Spring stops waiting for the phase after 100 ms and goes on to destroy the beans; the
    // handler ignores the shutdown request and is interrupted at 1 s: its hand-back needs the
    // store, which must still be open then
    Path file = dir.resolve("phase.db");
    String id = closeWhileALongJobRuns(shortShutdownPhase(file));
    WorkItem back = item(file, id);
    assertThat(back.status()).isEqualTo(WorkStatus.PENDING);
    assertThat(back.attempts()).as("a hand-back is not charged").isZero();
  }

  @Test
  void stopWithoutACallbackReturnsOnceTheLoopsStopped() throws Exception {
    Path file = dir.resolve("stop.db");
    runner(file).withPropertyValues("tether.worker.shutdown-timeout=1s").run(context -> {
      Slow slow = context.getBean(Slow.class);
      context.getBean(TetherQueues.class).send("slow", "600000");
      assertThat(slow.started.await(30, TimeUnit.SECONDS)).isTrue();
      TetherWorkers workers = context.getBean(TetherWorkers.class);
      List<WorkLoop> loops = workers.loops();
      workers.stop();
      assertThat(loops).noneMatch(WorkLoop::isRunning);
    });
  }

  @Test
  void duringTheDrainTimeoutARunningHandlerGoesOnWithoutAShutdownRequest() throws Exception {
    Path file = dir.resolve("drain-timeout.db");
    String[] id = new String[1];
    Slow[] slow = new Slow[1];
    runner(file).withPropertyValues("tether.worker.drain-timeout=20s", "tether.worker.shutdown-timeout=30s")
        .run(context -> {
          slow[0] = context.getBean(Slow.class);
          id[0] = context.getBean(TetherQueues.class).send("slow", "1500");
          assertThat(slow[0].started.await(30, TimeUnit.SECONDS)).isTrue();
          context.close();
        });
    assertThat(slow[0].sawShutdownRequest).as("asked to stop during the drain").isFalse();
    assertThat(item(file, id[0]).status()).isEqualTo(WorkStatus.COMPLETED);
  }

  @Test
  void aStartRefusedByTheCalibrationRulesLeavesNoSweepRunning() {
    runner(dir.resolve("refused.db"))
        .withPropertyValues("tether.handler-defaults.visibility=5m") // not above the 12 min watchdog
        .run(context -> assertThat(context).hasFailed().getFailure().rootCause()
            .hasMessageContaining("not calibrated"));
    assertThat(Thread.getAllStackTraces().keySet())
        .noneMatch(t -> t.isAlive() && t.getName().equals("tether-recovery-sweep"));
  }

  @Test
  void theWorkersStartAgainInTheSameContextOnceTheirDrainEnded() throws Exception {
    // Spring stops waiting for the stop after 100 ms; the handler ignores the request until it
    // is interrupted at 1 s: a start meanwhile waits for that drain (its loops, its sweep)
    Path file = dir.resolve("restart.db");
    shortShutdownPhase(file)
        .run(context -> {
          Slow slow = context.getBean(Slow.class);
          context.getBean(TetherQueues.class).send("slow", "600000");
          assertThat(slow.started.await(30, TimeUnit.SECONDS)).isTrue();
          TetherWorkers workers = context.getBean(TetherWorkers.class);
          context.stop();
          context.start();
          assertThat(workers.isRunning()).isTrue();
          org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30)).until(() ->
              !workers.loops().isEmpty() && workers.loops().stream().allMatch(WorkLoop::isRunning));
          assertThat(workers.sweep()).hasValueSatisfying(s -> assertThat(s.statistics().running()).isTrue());
        });
  }
}
