package dev.tether.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class SettableTickerTest {

  @Test
  void readsItsStartUntilAdvancedThenTheSumOfTheAdvances() {
    SettableTicker ticker = new SettableTicker();

    assertThat(ticker.read()).isEqualTo(SettableTicker.DEFAULT_START_NANOS).isNotZero();
    ticker.advance(Duration.ofMillis(1)).advance(Duration.ofNanos(5));
    assertThat(ticker.read()).isEqualTo(SettableTicker.DEFAULT_START_NANOS + 1_000_005L);
  }

  @Test
  void readingsNearTheEndOfTheLongRangeWrapAndStillCompareByDifference() {
    SettableTicker ticker = new SettableTicker(Long.MAX_VALUE - 10);
    long before = ticker.read();

    ticker.advance(Duration.ofNanos(20));

    assertThat(ticker.read()).isNegative();
    assertThat(ticker.read() - before).isEqualTo(20);
  }

  @Test
  void goingBackIsRefusedAndChangesNothing() {
    SettableTicker ticker = new SettableTicker(42);

    assertThatThrownBy(() -> ticker.advance(Duration.ofNanos(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("a monotonic ticker cannot go back: advance(PT-0.000000001S)");
    assertThatThrownBy(() -> ticker.advance(null)).isInstanceOf(NullPointerException.class);
    assertThat(ticker.read()).isEqualTo(42);
  }
}
