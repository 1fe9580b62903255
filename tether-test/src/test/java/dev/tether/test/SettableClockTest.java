package dev.tether.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;

class SettableClockTest {

  @Test
  void readsItsStartInUtcUntilMoved() {
    SettableClock clock = new SettableClock();

    assertThat(clock.instant()).isEqualTo(SettableClock.DEFAULT_START);
    assertThat(clock.millis()).isEqualTo(SettableClock.DEFAULT_START.toEpochMilli());
    assertThat(clock.getZone()).isEqualTo(ZoneOffset.UTC);
  }

  @Test
  void movesForwardBackAndToASetInstant() {
    Instant start = Instant.parse("2030-06-01T12:00:00Z");
    SettableClock clock = new SettableClock(start);

    clock.advance(Duration.ofHours(1));
    assertThat(clock.instant()).isEqualTo(start.plusSeconds(3600));
    clock.advance(Duration.ofHours(-2));
    assertThat(clock.instant()).isEqualTo(start.minusSeconds(3600));
    clock.set(start);
    assertThat(clock.instant()).isEqualTo(start);
  }

  @Test
  void aClockInAnotherZoneSharesTheReading() {
    SettableClock clock = new SettableClock();
    Clock paris = clock.withZone(ZoneId.of("Europe/Paris"));

    clock.advance(Duration.ofMinutes(7));

    assertThat(paris.getZone()).isEqualTo(ZoneId.of("Europe/Paris"));
    assertThat(paris.instant()).isEqualTo(clock.instant());
  }

  @Test
  void nullArgumentsAreRefusedAndChangeNothing() {
    SettableClock clock = new SettableClock();

    assertThatThrownBy(() -> clock.advance(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> clock.set(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> new SettableClock(null)).isInstanceOf(NullPointerException.class);
    assertThat(clock.instant()).isEqualTo(SettableClock.DEFAULT_START);
  }
}
