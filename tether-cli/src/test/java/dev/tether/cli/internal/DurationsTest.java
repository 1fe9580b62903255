package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class DurationsTest {
  @Test
  void unitsParseToTheirDurations() {
    assertThat(Durations.parse("30s")).isEqualTo(Duration.ofSeconds(30));
    assertThat(Durations.parse("5m")).isEqualTo(Duration.ofMinutes(5));
    assertThat(Durations.parse("1h")).isEqualTo(Duration.ofHours(1));
    assertThat(Durations.parse("250ms")).isEqualTo(Duration.ofMillis(250));
    assertThat(Durations.parse("2d")).isEqualTo(Duration.ofDays(2));
    assertThat(Durations.parse("0s")).isEqualTo(Duration.ZERO);
  }

  @Test
  void secondsMayHaveAFractionAsMessagesPrintThem() {
    assertThat(Durations.parse("1.5s")).isEqualTo(Duration.ofMillis(1500));
    assertThat(Durations.parse("0.25s")).isEqualTo(Duration.ofMillis(250));
    assertThat(Durations.parse("2m0.125s")).isEqualTo(Duration.ofMillis(120_125));
    for (Duration d : new Duration[] {Duration.ofMillis(1500), Duration.ofMillis(250),
        Duration.ofSeconds(90), Duration.ofMillis(20_001)}) {
      assertThat(Durations.parse(dev.tether.DurationText.of(d))).as("as printed").isEqualTo(d);
    }
    assertThatThrownBy(() -> Durations.parse("1.5m")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Durations.parse("1.5555s")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void combinedUnitsAddUp() {
    assertThat(Durations.parse("1h30m")).isEqualTo(Duration.ofMinutes(90));
    assertThat(Durations.parse("1m500ms")).isEqualTo(Duration.ofMillis(60_500));
  }

  @Test
  void iso8601IsAcceptedInAnyCase() {
    assertThat(Durations.parse("PT30S")).isEqualTo(Duration.ofSeconds(30));
    assertThat(Durations.parse("pt1m")).isEqualTo(Duration.ofMinutes(1));
    assertThat(Durations.parse("P1D")).isEqualTo(Duration.ofDays(1));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", " ", "abc", "30", "s", "30x", "30 s", "-5s", "1.5m", "1.s", "PT", "P1Y", "5m-", "1h 30m"})
  void garbageIsRejectedWithAMessageNamingTheText(String text) {
    assertThatThrownBy(() -> Durations.parse(text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("duration");
  }

  @Test
  void negativeIsoDurationIsRejected() {
    assertThatThrownBy(() -> Durations.parse("PT-5S"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("negative");
  }

  @Test
  void hugeValuesAreRejectedNotWrapped() {
    assertThatThrownBy(() -> Durations.parse("999999999999d"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("too large");
  }

  @Test
  void humanFormatIsCompact() {
    assertThat(Durations.human(Duration.ofMillis(850))).isEqualTo("850ms");
    assertThat(Durations.human(Duration.ofMillis(12_300))).isEqualTo("12.3s");
    assertThat(Durations.human(Duration.ofSeconds(245))).isEqualTo("4m05s");
    assertThat(Durations.human(Duration.ofMinutes(130))).isEqualTo("2h10m");
    assertThat(Durations.human(Duration.ofSeconds(-3))).isEqualTo("-3.0s");
  }
}
