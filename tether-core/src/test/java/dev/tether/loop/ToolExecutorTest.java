package dev.tether.loop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tether.Heartbeat;
import dev.tether.test.SettableTicker;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ToolExecutorTest {
  private final SettableTicker ticker = new SettableTicker();
  private final Heartbeat heartbeat = new Heartbeat(ticker);
  private final List<String> beats = new ArrayList<>();

  ToolExecutorTest() {
    heartbeat.addCallback(() -> beats.add("beat"));
  }

  @Test
  void beatsBeforeAndAfterEachTool() {
    List<String> order = beats;
    ToolExecutor tools =
        ToolExecutor.builder()
            .tool("echo", (Tool<String, String>) (p, ctx) -> {
              order.add("run " + ctx.toolName());
              return p;
            })
            .build();

    Object out = uncheck(() -> tools.execute("echo", "x", WorkContext.of(heartbeat)));

    assertThat(out).isEqualTo("x");
    assertThat(order).containsExactly("beat", "run echo", "beat");
  }

  @Test
  void beatsAfterAToolThatThrowsAndPropagatesItsError() {
    ToolExecutor tools =
        ToolExecutor.builder()
            .tool("fail", (Tool<String, String>) (p, ctx) -> {
              throw new IOException("disk gone");
            })
            .build();

    assertThatThrownBy(() -> tools.execute("fail", "x", WorkContext.of(heartbeat)))
        .isInstanceOf(IOException.class)
        .hasMessage("disk gone");
    assertThat(beats).containsExactly("beat", "beat");
  }

  @Test
  void aToolContextBeatRefreshesTheHeartbeat() {
    ticker.advance(Duration.ofMillis(100));
    ToolContext context = new ToolContext("t", WorkContext.of(heartbeat));
    context.beat();
    assertThat(heartbeat.elapsed()).isLessThan(Duration.ofMillis(50));
  }

  @Test
  void anUnknownToolIsAClearError() {
    ToolExecutor tools = ToolExecutor.builder().tool("a", (Tool<String, String>) (p, c) -> p).build();
    assertThatThrownBy(() -> tools.execute("b", "x", WorkContext.of(heartbeat)))
        .isInstanceOf(UnknownToolException.class)
        .hasMessageContaining("no tool named 'b'")
        .hasMessageContaining("[a]");
    assertThat(beats).isEmpty();
  }

  @Test
  void duplicateAndBlankToolNamesAreRejected() {
    ToolExecutor.Builder b = ToolExecutor.builder().tool("a", (Tool<String, String>) (p, c) -> p);
    assertThatThrownBy(() -> b.tool("a", (Tool<String, String>) (p, c) -> p))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("already registered");
    assertThatThrownBy(() -> b.tool(" ", (Tool<String, String>) (p, c) -> p))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void anInnerLoopBeatsAtEveryIteration() {
    Integer last = uncheck(() -> InnerLoop.run(0, WorkContext.of(heartbeat), (s, c) -> s < 4 ? s + 1 : null));
    assertThat(last).isEqualTo(4);
    assertThat(beats).hasSize(5); // iterations 0..4, the last one returning null
  }

  @Test
  void anInnerLoopStopsWhenTheLeaseIsLost() {
    WorkContext lost = WorkContext.builder(heartbeat).message("m", 1).leaseLost(() -> true).build();
    assertThatThrownBy(() -> InnerLoop.run(0, lost, (s, c) -> s + 1))
        .isInstanceOf(WorkStoppedException.class)
        .satisfies(e -> assertThat(((WorkStoppedException) e).reason())
            .isEqualTo(WorkStoppedException.Reason.LEASE_LOST));
  }

  @Test
  void anInnerLoopStopsAtItsDeadline() {
    WorkContext ctx =
        WorkContext.builder(heartbeat).deadline(Deadline.after(Duration.ofSeconds(3), ticker)).build();
    List<Integer> seen = new ArrayList<>();
    assertThatThrownBy(
            () ->
                InnerLoop.run(
                    0,
                    ctx,
                    (s, c) -> {
                      seen.add(s);
                      ticker.advance(Duration.ofSeconds(1));
                      return s + 1;
                    }))
        .isInstanceOf(WorkStoppedException.class)
        .hasMessageContaining("deadline");
    assertThat(seen).containsExactly(0, 1, 2);
  }

  interface ThrowingSupplier<T> {
    T get() throws Exception;
  }

  private static <T> T uncheck(ThrowingSupplier<T> s) {
    try {
      return s.get();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }
}
