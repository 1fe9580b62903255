package dev.tether;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class CoarseTickerTest {

  @Test
  void readingsFollowNanoTimeWithinAFewResolutionSteps() {
    try (CoarseTicker ticker = CoarseTicker.start()) {
      long first = ticker.read();
      await().atMost(Duration.ofSeconds(5)).until(() -> ticker.read() - first >= 5_000_000L);
      long lag = System.nanoTime() - ticker.read();
      assertThat(lag).isBetween(-1_000_000L, Duration.ofMillis(500).toNanos());
    }
  }

  @Test
  void aClosedTickerFallsBackToNanoTimeAndStopsItsThread() {
    CoarseTicker ticker = CoarseTicker.start();
    ticker.close();
    ticker.close(); // idempotent
    assertThat(ticker.isRunning()).isFalse();
    long before = System.nanoTime();
    long reading = ticker.read();
    assertThat(reading).isGreaterThanOrEqualTo(before);
    await()
        .atMost(Duration.ofSeconds(5))
        .until(
            () ->
                Thread.getAllStackTraces().keySet().stream()
                    .noneMatch(t -> t.getName().equals("tether-coarse-ticker") && t.isAlive()));
  }

  @Test
  void aHeartbeatOnACoarseTickerMeasuresElapsedTime() {
    try (CoarseTicker ticker = CoarseTicker.start()) {
      Heartbeat heartbeat = new Heartbeat(ticker);
      heartbeat.beat();
      await()
          .atMost(Duration.ofSeconds(5))
          .until(() -> heartbeat.elapsed().compareTo(Duration.ofMillis(20)) >= 0);
      heartbeat.beat();
      assertThat(heartbeat.elapsed()).isLessThan(Duration.ofMillis(20));
    }
  }

  @Test
  void resolutionOutOfRangeIsRejected() {
    assertThatThrownBy(() -> CoarseTicker.start(Duration.ofNanos(10), Thread::new))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("resolution must be between 100 µs and 1 s");
  }
}
