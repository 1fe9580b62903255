package dev.tether.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tether.loop.Handler;
import dev.tether.loop.InnerLoop;
import dev.tether.loop.Tool;
import dev.tether.loop.ToolExecutor;
import dev.tether.loop.WorkStoppedException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.StringJoiner;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class WorkFixtureTest {

  /** A handler as a user would write it: one inner-loop step per chunk, each step a beat. */
  private static final Handler<List<String>, String> JOIN =
      (chunks, context) -> {
        StringJoiner out = new StringJoiner(",");
        InnerLoop.run(
            0,
            context,
            (i, ctx) -> {
              if (i == chunks.size()) {
                return null;
              }
              out.add(chunks.get(i));
              return i + 1;
            });
        return out.toString();
      };

  @Test
  void aHandlerRunsToItsResultAndItsBeatsAreCounted() throws Exception {
    WorkFixture work = WorkFixture.create();

    String result = JOIN.handle(List.of("a", "b", "c"), work.context());

    assertThat(result).isEqualTo("a,b,c");
    assertThat(work.beats()).isEqualTo(4); // one per iteration, the last one finding nothing left
  }

  @Test
  void losingTheLeaseAtABeatStopsTheHandlerAtItsNextCheck() {
    WorkFixture work = WorkFixture.create();
    List<Integer> stepsRun = new ArrayList<>();
    work.atBeat(3, work::loseLease);

    assertThatThrownBy(
            () ->
                InnerLoop.run(
                    0,
                    work.context(),
                    (n, ctx) -> {
                      stepsRun.add(n);
                      return n + 1;
                    }))
        .isInstanceOfSatisfying(
            WorkStoppedException.class,
            e -> assertThat(e.reason()).isEqualTo(WorkStoppedException.Reason.LEASE_LOST));
    assertThat(stepsRun).containsExactly(0, 1);
    assertThat(work.beats()).isEqualTo(3);
    assertThat(work.context().isLeaseLost()).isTrue();
  }

  @Test
  void shutdownRequestedStopsTheWorkWithReasonShutdown() {
    WorkFixture work = WorkFixture.create();
    work.requestShutdown();

    assertThat(work.context().isShutdownRequested()).isTrue();
    assertThat(work.context().shouldStop()).isTrue();
    assertThatThrownBy(() -> JOIN.handle(List.of("a"), work.context()))
        .isInstanceOfSatisfying(
            WorkStoppedException.class,
            e -> assertThat(e.reason()).isEqualTo(WorkStoppedException.Reason.SHUTDOWN));
  }

  @Test
  void theDeadlinePassesOnlyWhenTheTestAdvancesTime() {
    WorkFixture work = WorkFixture.builder().deadline(Duration.ofMinutes(5)).build();

    assertThat(work.context().deadline().orElseThrow().remaining())
        .isEqualTo(Duration.ofMinutes(5));
    assertThat(work.context().shouldStop()).isFalse();

    work.advance(Duration.ofMinutes(5).minusNanos(1));
    assertThat(work.context().shouldStop()).isFalse();

    work.advance(Duration.ofNanos(1));
    assertThat(work.context().shouldStop()).isTrue();
    assertThat(work.context().isLeaseLost()).isFalse();
  }

  @Test
  void advancingPastTheDeadlineAtABeatStopsWithReasonDeadline() {
    WorkFixture work = WorkFixture.builder().deadline(Duration.ofSeconds(30)).build();
    work.atBeat(2, () -> work.advance(Duration.ofSeconds(31)));

    assertThatThrownBy(() -> JOIN.handle(List.of("a", "b", "c"), work.context()))
        .isInstanceOfSatisfying(
            WorkStoppedException.class,
            e -> assertThat(e.reason()).isEqualTo(WorkStoppedException.Reason.DEADLINE));
  }

  @Test
  void theContextCarriesTheMessageAndDeliveryCountItWasBuiltWith() {
    WorkFixture defaults = WorkFixture.create();
    WorkFixture redelivery = WorkFixture.builder().message("job-7", 3).build();

    assertThat(defaults.context().messageId()).contains(WorkFixture.DEFAULT_MESSAGE_ID);
    assertThat(defaults.context().deliveryCount()).isEqualTo(1);
    assertThat(defaults.context().deadline()).isEmpty();
    assertThat(redelivery.context().messageId()).contains("job-7");
    assertThat(redelivery.context().deliveryCount()).isEqualTo(3);
  }

  @Test
  void toolCallsThroughAToolExecutorBeatBeforeAndAfterEachCall() throws Exception {
    WorkFixture work = WorkFixture.create();
    Tool<String, String> upper = (s, toolContext) -> s.toUpperCase(Locale.ROOT);
    ToolExecutor tools = ToolExecutor.builder().tool("upper", upper).build();

    assertThat(tools.execute("upper", "x", work.context())).isEqualTo("X");
    assertThat(work.beats()).isEqualTo(2);
  }

  @Test
  void timeMovesOnlyWhenAdvancedSoTheHeartbeatLooksStalledExactlyAsLongAsTheTestSays() {
    SettableTicker shared = new SettableTicker();
    WorkFixture work = WorkFixture.builder().ticker(shared).build();

    assertThat(work.ticker()).isSameAs(shared);
    assertThat(work.heartbeat().elapsed()).isZero();
    shared.advance(Duration.ofSeconds(90));
    assertThat(work.heartbeat().elapsed()).isEqualTo(Duration.ofSeconds(90));
    work.context().beat();
    assertThat(work.heartbeat().elapsed()).isZero();
  }

  @Test
  void beatsFromThreadsTheHandlerStartsAreCountedAndAnActionRunsOnce() throws Exception {
    WorkFixture work = WorkFixture.create();
    AtomicInteger actionRuns = new AtomicInteger();
    work.atBeat(500, actionRuns::incrementAndGet);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      Thread thread =
          new Thread(
              () -> {
                for (int i = 0; i < 250; i++) {
                  work.context().beat();
                }
              });
      threads.add(thread);
      thread.start();
    }
    for (Thread thread : threads) {
      thread.join();
    }

    assertThat(work.beats()).isEqualTo(1000);
    assertThat(actionRuns).hasValue(1);
  }

  @Test
  void anActionForABeatAlreadyMadeIsRefused() {
    WorkFixture work = WorkFixture.create();
    work.context().beat();
    work.context().beat();

    assertThatThrownBy(() -> work.atBeat(2, work::loseLease))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("beat 2 has already been made (2 beats so far)");
    assertThatThrownBy(() -> work.atBeat(0, work::loseLease))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(work.context().isLeaseLost()).isFalse();
  }

  @Test
  void badBuilderValuesAreRefusedWithTheValue() {
    assertThatThrownBy(() -> WorkFixture.builder().message("m", 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("deliveryCount must be >= 1, was 0");
    assertThatThrownBy(() -> WorkFixture.builder().deadline(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("deadline budget must be >= 0, was PT-1S");
    assertThatThrownBy(() -> WorkFixture.builder().message(null, 1))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> WorkFixture.builder().ticker(null))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> WorkFixture.create().advance(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
