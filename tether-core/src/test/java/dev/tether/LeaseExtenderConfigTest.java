package dev.tether;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class LeaseExtenderConfigTest {

  @Test
  void defaultsExtendByFiveMinutesAtMostOnceAMinute() {
    LeaseExtenderConfig config = LeaseExtenderConfig.defaults();
    assertThat(config.interval()).isEqualTo(Duration.ofSeconds(60));
    assertThat(config.extension()).isEqualTo(Duration.ofSeconds(300));
    assertThat(config.enabled()).isTrue();
  }

  @Test
  void negativeIntervalIsRejectedNamingTheValue() {
    assertThatThrownBy(() -> LeaseExtenderConfig.of(Duration.ofSeconds(-1), Duration.ofSeconds(5)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("interval must be >= 0")
        .hasMessageContaining("PT-1S");
  }

  @Test
  void nonPositiveExtensionIsRejectedNamingTheValue() {
    assertThatThrownBy(() -> LeaseExtenderConfig.of(Duration.ZERO, Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("extension must be > 0")
        .hasMessageContaining("PT0S");
  }

  @Test
  void intervalNotBelowExtensionIsRejectedNamingBothValues() {
    assertThatThrownBy(() -> LeaseExtenderConfig.of(Duration.ofSeconds(300), Duration.ofSeconds(300)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("interval (PT5M) must be < extension (PT5M)");
  }

  @Test
  void zeroIntervalMeansNoRateLimit() {
    assertThat(LeaseExtenderConfig.of(Duration.ZERO, Duration.ofSeconds(1)).interval()).isZero();
  }
}
