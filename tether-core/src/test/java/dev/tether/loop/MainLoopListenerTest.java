package dev.tether.loop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.mailbox.DeadLetterPolicy;
import dev.tether.mailbox.InMemoryMailbox;
import dev.tether.mailbox.Message;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The listener events metrics and tracing rely on: finished, checkpointed, deadLettered, all. */
class MainLoopListenerTest {
  private final InMemoryMailbox<String, String> requests =
      InMemoryMailbox.<String, String>builder("requests").build();
  private final List<String> log = new CopyOnWriteArrayList<>();

  @AfterEach
  void close() {
    requests.close();
  }

  private final class Recording implements MainLoop.Listener {
    private final String name;

    Recording(String name) {
      this.name = name;
    }

    @Override
    public void received(Message<?, ?> message) {
      log.add(name + ":received");
    }

    @Override
    public void completed(Message<?, ?> message, Duration took) {
      log.add(name + ":completed");
    }

    @Override
    public void failed(Message<?, ?> message, Exception error, DeadLetterPolicy.Decision decision,
        Duration took) {
      log.add(name + ":failed");
    }

    @Override
    public void deadLettered(Message<?, ?> message) {
      log.add(name + ":deadLettered");
    }

    @Override
    public void checkpointed(Message<?, ?> message, int bytes) {
      log.add(name + ":checkpointed " + bytes);
    }

    @Override
    public void finished(Message<?, ?> message) {
      log.add(name + ":finished");
    }
  }

  private MainLoop<String, String> loop(MainLoop.Listener listener, Handler<String, String> h,
      int maxAttempts) {
    return MainLoop.builder("w", requests, h)
        .config(MainLoopConfig.builder().waitTime(Duration.ZERO)
            .deadLetterPolicy(DeadLetterPolicy.builder().maxAttempts(maxAttempts)
                .backoff(Duration.ofMillis(1), Duration.ofMillis(1)).build())
            .build())
        .listener(listener)
        .build();
  }

  @Test
  void checkpointsAreReportedAndFinishedComesLast() {
    requests.send("x");
    loop(new Recording("a"), (body, ctx) -> {
      ctx.checkpoint("abc");
      return body;
    }, 3).run(1);
    assertThat(log).containsExactly("a:received", "a:checkpointed 3", "a:completed", "a:finished");
  }

  @Test
  void aDeadLetterIsReportedAfterTheFailure() {
    requests.send("x");
    loop(new Recording("a"), (body, ctx) -> {
      throw new IllegalStateException("boom");
    }, 1).run(1);
    assertThat(log).containsExactly("a:received", "a:failed", "a:deadLettered", "a:finished");
  }

  @Test
  void aRetriedFailureIsNotADeadLetter() {
    requests.send("x");
    loop(new Recording("a"), (body, ctx) -> {
      throw new IllegalStateException("boom");
    }, 3).run(1);
    assertThat(log).containsExactly("a:received", "a:failed", "a:finished");
  }

  @Test
  void allTellsEachListenerInOrderEvenWhenOneThrows() {
    requests.send("x");
    MainLoop.Listener throwing = new MainLoop.Listener() {
      @Override
      public void received(Message<?, ?> message) {
        throw new IllegalStateException("listener bug");
      }
    };
    loop(MainLoop.Listener.all(new Recording("a"), throwing, new Recording("b")),
        (body, ctx) -> body, 3).run(1);
    assertThat(log).containsExactly("a:received", "b:received", "a:completed", "b:completed",
        "a:finished", "b:finished");
  }
}
