package dev.tether.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import dev.tether.jdbc.WorkStatus;
import dev.tether.loop.WorkContext;
import dev.tether.loop.WorkStoppedException;
import dev.tether.spring.TetherHandler;
import dev.tether.spring.TetherQueues;
import java.nio.file.Path;
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
    String[] id = new String[1];
    runner(file).withPropertyValues("tether.worker.shutdown-timeout=500ms").run(context -> {
      Slow slow = context.getBean(Slow.class);
      id[0] = context.getBean(TetherQueues.class).send("slow", "600000");
      assertThat(slow.started.await(30, TimeUnit.SECONDS)).isTrue();
      context.close();
    });
    WorkItem back = item(file, id[0]);
    assertThat(back.status()).isEqualTo(WorkStatus.PENDING);
    assertThat(back.attempts()).as("a hand-back is not charged").isZero();
    assertThat(back.deliveryCount()).isEqualTo(1);
  }
}
