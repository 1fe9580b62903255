package dev.tether.health;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tether.Heartbeat;
import dev.tether.Ticker;
import dev.tether.test.SettableTicker;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class WatchdogTest {
  private final SettableTicker ticker = new SettableTicker();

  private static final Watchdog.Terminator NEVER =
      (status, stalls) -> {
        throw new AssertionError("terminator must not be called, stalls=" + stalls);
      };

  @Test
  void detectsStallOnlyAfterThreshold() {
    Heartbeat hb = new Heartbeat(ticker);
    Watchdog watchdog =
        Watchdog.builder()
            .heartbeats(List.of(hb))
            .stallThreshold(Duration.ofMillis(100))
            .checkInterval(Duration.ofMillis(50))
            .ticker(ticker)
            .terminator(NEVER)
            .build();

    assertThat(watchdog.checkHeartbeats()).isEmpty();
    ticker.advance(Duration.ofMillis(100));
    assertThat(watchdog.checkHeartbeats()).as("exactly at the threshold is not a stall").isEmpty();

    ticker.advance(Duration.ofMillis(50));
    List<Watchdog.Stall> stalls = watchdog.checkHeartbeats();
    assertThat(stalls).hasSize(1);
    assertThat(stalls.get(0).name()).isEqualTo("loop-0");
    assertThat(stalls.get(0).elapsed()).isEqualTo(Duration.ofMillis(150));
    assertThat(stalls.get(0).threshold()).isEqualTo(Duration.ofMillis(100));
  }

  @Test
  void stallClearsOnBeat() {
    Heartbeat hb = new Heartbeat(ticker);
    Watchdog watchdog =
        Watchdog.builder()
            .heartbeats(List.of(hb))
            .stallThreshold(Duration.ofMillis(100))
            .checkInterval(Duration.ofMillis(50))
            .ticker(ticker)
            .terminator(NEVER)
            .build();
    ticker.advance(Duration.ofMillis(150));
    assertThat(watchdog.checkHeartbeats()).hasSize(1);

    hb.beat();

    assertThat(watchdog.checkHeartbeats()).isEmpty();
  }

  @Test
  void reportsOnlyTheStalledLoopsByName() {
    Heartbeat busy = new Heartbeat(ticker);
    Heartbeat stuck = new Heartbeat(ticker);
    Watchdog watchdog =
        Watchdog.builder()
            .heartbeat("busy", busy)
            .heartbeat("stuck", stuck)
            .stallThreshold(Duration.ofSeconds(10))
            .ticker(ticker)
            .terminator(NEVER)
            .build();
    ticker.advance(Duration.ofSeconds(8));
    busy.beat();
    ticker.advance(Duration.ofSeconds(8));

    assertThat(watchdog.checkHeartbeats())
        .extracting(Watchdog.Stall::name)
        .containsExactly("stuck");
  }

  @Test
  void nextCheckIsWhenTheOldestHeartbeatCouldStallNotTheInterval() {
    Heartbeat hb = new Heartbeat(ticker);
    Watchdog watchdog =
        Watchdog.builder()
            .heartbeats(List.of(hb))
            .stallThreshold(Duration.ofSeconds(1))
            .checkInterval(Duration.ofSeconds(60))
            .ticker(ticker)
            .terminator(NEVER)
            .build();

    assertThat(watchdog.nextCheckDelay()).isBetween(Duration.ofSeconds(1), Duration.ofMillis(1010));
    ticker.advance(Duration.ofMillis(300));
    assertThat(watchdog.nextCheckDelay()).isBetween(Duration.ofMillis(700), Duration.ofMillis(710));
    ticker.advance(Duration.ofSeconds(5));
    assertThat(watchdog.nextCheckDelay())
        .as("already stalled: check again almost at once")
        .isBetween(Duration.ofNanos(1), Duration.ofMillis(1));
  }

  @Test
  void nextCheckIsCappedByTheIntervalAndFollowsTheEarliestHeartbeat() {
    Heartbeat a = new Heartbeat(ticker);
    ticker.advance(Duration.ofSeconds(200));
    Heartbeat b = new Heartbeat(ticker);
    Watchdog watchdog =
        Watchdog.builder()
            .heartbeat("a", a)
            .heartbeat("b", b)
            .stallThreshold(Duration.ofSeconds(720))
            .checkInterval(Duration.ofSeconds(60))
            .ticker(ticker)
            .terminator(NEVER)
            .build();
    assertThat(watchdog.nextCheckDelay()).isEqualTo(Duration.ofSeconds(60));

    ticker.advance(Duration.ofSeconds(500)); // a: 700 s since last beat, b: 500 s
    assertThat(watchdog.nextCheckDelay()).isBetween(Duration.ofSeconds(20), Duration.ofMillis(20_001));
  }

  @Test
  void rejectsHeartbeatOnAnotherTicker() {
    Heartbeat onSystemTicker = new Heartbeat(Ticker.system());
    assertThatThrownBy(
            () -> Watchdog.builder().heartbeat("x", onSystemTicker).ticker(ticker).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("loop 'x'")
        .hasMessageContaining("ticker");
  }

  @Test
  void rejectsInvalidConfigurationWithTheValue() {
    assertThatThrownBy(() -> Watchdog.builder().stallThreshold(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("stallThreshold must be > 0, was PT0S");
    assertThatThrownBy(() -> Watchdog.builder().checkInterval(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("checkInterval");
    assertThatThrownBy(
            () ->
                Watchdog.builder()
                    .heartbeat("same", new Heartbeat())
                    .heartbeat("same", new Heartbeat()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'same'");
  }

  @Test
  void realTimeStallIsDetectedAfterTheThresholdWithoutWaitingForTheNextIntervalCheck()
      throws Exception {
    Heartbeat hb = new Heartbeat();
    CompletableFuture<Long> terminatedAt = new CompletableFuture<>();
    List<Watchdog.Stall> seen = new CopyOnWriteArrayList<>();
    Watchdog watchdog =
        Watchdog.builder()
            .heartbeat("stuck", hb)
            .stallThreshold(Duration.ofMillis(500))
            .checkInterval(Duration.ofSeconds(60))
            .terminator(
                (status, stalls) -> {
                  seen.addAll(stalls);
                  terminatedAt.complete(System.nanoTime());
                })
            .build();
    hb.beat();
    long lastBeat = hb.lastBeatNanos();
    watchdog.start();
    try {
      // The check interval is 60 s: an answer within seconds means the watchdog woke at the
      // earliest possible stall. How close to the threshold it acts is a figure for a
      // benchmark, not a bound for a test on a loaded machine.
      long at = terminatedAt.get(30, TimeUnit.SECONDS);
      assertThat(TimeUnit.NANOSECONDS.toMillis(at - lastBeat)).isGreaterThanOrEqualTo(500L);
      assertThat(seen).extracting(Watchdog.Stall::name).containsExactly("stuck");
    } finally {
      watchdog.stop();
    }
  }

  @Test
  void beatingLoopIsNeverTerminatedAndStopIsIdempotent() throws Exception {
    Heartbeat hb = new Heartbeat();
    Watchdog watchdog =
        Watchdog.builder()
            .heartbeat("alive", hb)
            .stallThreshold(Duration.ofMillis(400))
            .checkInterval(Duration.ofMillis(20))
            .terminator(NEVER)
            .build();
    watchdog.start();
    assertThat(watchdog.isRunning()).isTrue();
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1000);
    while (System.nanoTime() < end) {
      hb.beat();
      Thread.sleep(10); // the loop under watch does real work between beats
    }
    assertThat(watchdog.isRunning()).isTrue();
    watchdog.stop();
    watchdog.stop();
    assertThat(watchdog.isRunning()).isFalse();
    assertThatThrownBy(watchdog::start).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void stuckDiagnosticsCannotPreventTermination() throws Exception {
    Heartbeat hb = new Heartbeat();
    CompletableFuture<Integer> status = new CompletableFuture<>();
    CountDownLatch never = new CountDownLatch(1);
    Watchdog watchdog =
        Watchdog.builder()
            .heartbeat("stuck", hb)
            .stallThreshold(Duration.ofMillis(50))
            .diagnosticsTimeout(Duration.ofMillis(300))
            .diagnostics(
                stalls -> {
                  // like a logger stuck on a full pipe: blocks for good, ignoring interrupts
                  while (true) {
                    try {
                      never.await();
                      return;
                    } catch (InterruptedException ignored) {
                      // keep blocking
                    }
                  }
                })
            .terminator((s, stalls) -> status.complete(s))
            .build();
    long start = System.nanoTime();
    watchdog.start();
    try {
      assertThat(status.get(5, TimeUnit.SECONDS)).isEqualTo(Watchdog.EXIT_STATUS);
      long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertThat(tookMs).as("threshold + diagnostics timeout, then terminate").isBetween(340L, 3000L);
      org.awaitility.Awaitility.await()
          .alias("stops monitoring once the terminator returned")
          .atMost(Duration.ofSeconds(5))
          .until(() -> !watchdog.isRunning());
    } finally {
      never.countDown();
    }
  }

  @Test
  void failingTerminatorIsLoggedAndTheWatchdogStops() throws Exception {
    CountDownLatch called = new CountDownLatch(1);
    Watchdog watchdog =
        Watchdog.builder()
            .heartbeat("stuck", new Heartbeat())
            .stallThreshold(Duration.ofMillis(20))
            .terminator(
                (s, stalls) -> {
                  called.countDown();
                  throw new IllegalStateException("cannot exit");
                })
            .build();
    watchdog.start();
    assertThat(called.await(5, TimeUnit.SECONDS)).isTrue();
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> !watchdog.isRunning());
  }

  @Test
  void threadDumpContainsEveryThreadWithItsFrames() {
    String dump = Watchdog.threadDump();
    assertThat(dump).contains("\"" + Thread.currentThread().getName() + "\"");
    assertThat(dump).contains("threadDumpContainsEveryThreadWithItsFrames");
  }
}
