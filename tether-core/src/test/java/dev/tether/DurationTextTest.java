package dev.tether;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class DurationTextTest {
  @Test
  void durationsReadAsTheOptionsTakeThem() {
    assertThat(DurationText.of(Duration.ofSeconds(90))).isEqualTo("90s");
    assertThat(DurationText.of(Duration.ofMillis(500))).isEqualTo("500ms");
    assertThat(DurationText.of(Duration.ofMillis(1500))).isEqualTo("1.5s");
    assertThat(DurationText.of(Duration.ofMinutes(12))).isEqualTo("720s");
    assertThat(DurationText.of(Duration.ZERO)).isEqualTo("0ms");
    assertThat(DurationText.of(Duration.ofNanos(1500))).isEqualTo("0.0000015s");
    assertThat(DurationText.of(null)).isEqualTo("none");
  }
}
