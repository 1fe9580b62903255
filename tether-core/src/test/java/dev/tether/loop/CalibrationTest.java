package dev.tether.loop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.LeaseExtenderConfig;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class CalibrationTest {
  private static final Optional<Duration> WATCHDOG_720 = Optional.of(Duration.ofSeconds(720));
  private static final Duration INTERVAL_60 = Duration.ofSeconds(60);

  /** The worked example: visibility 1800, extension 300 every 60, deadline 600. */
  private static MainLoopConfig.Builder workedExample() {
    return MainLoopConfig.builder()
        .visibilityTimeout(Duration.ofSeconds(1800))
        .waitTime(Duration.ofSeconds(20))
        .deadline(Duration.ofSeconds(600))
        .leaseExtender(LeaseExtenderConfig.of(Duration.ofSeconds(60), Duration.ofSeconds(300)));
  }

  private static List<Calibration.Violation> check(MainLoopConfig config) {
    return Calibration.check(
        List.of(new FakeLoop("worker").config(config)), WATCHDOG_720, INTERVAL_60);
  }

  @Test
  void theDocumentedDefaultsPass() {
    assertThat(check(workedExample().build())).isEmpty();
    assertThat(check(MainLoopConfig.defaults())).as("MainLoopConfig.defaults()").isEmpty();
  }

  @Test
  void visibilityNotCoveringWatchdogPlusProcessingIsReportedWithValues() {
    List<Calibration.Violation> v =
        check(workedExample().visibilityTimeout(Duration.ofSeconds(1320)).build());

    assertThat(v).hasSize(1);
    assertThat(v.get(0).rule()).isEqualTo(Calibration.VISIBILITY_COVERS_WATCHDOG);
    assertThat(v.get(0).loop()).hasValue("worker");
    assertThat(v.get(0).toString())
        .contains("loop 'worker'")
        .contains("visibility_timeout > watchdog_threshold + max_processing_time")
        .contains("visibility_timeout=1320s")
        .contains("watchdog_threshold=720s")
        .contains("max_processing_time=600s (deadline)");
  }

  @Test
  void watchdogNotCoveringWaitPlusProcessingIsReportedWithValues() {
    List<Calibration.Violation> v =
        Calibration.check(
            List.of(new FakeLoop("worker").config(workedExample().build())),
            Optional.of(Duration.ofSeconds(620)),
            Duration.ofSeconds(60));

    assertThat(v).extracting(Calibration.Violation::rule).containsExactly(Calibration.WATCHDOG_COVERS_WORK);
    assertThat(v.get(0).values())
        .contains("watchdog_threshold=620s")
        .contains("wait_time=20s")
        .contains("max_processing_time=600s");
  }

  @Test
  void watchdogIntervalOfAThirdOfTheThresholdOrMoreIsReported() {
    List<Calibration.Violation> v =
        Calibration.check(List.of(), WATCHDOG_720, Duration.ofSeconds(240));

    assertThat(v).hasSize(1);
    assertThat(v.get(0).rule()).isEqualTo(Calibration.WATCHDOG_INTERVAL);
    assertThat(v.get(0).loop()).isEmpty();
    assertThat(v.get(0).toString())
        .startsWith("group: ")
        .contains("watchdog_interval=240s")
        .contains("watchdog_threshold=720s");
    assertThat(Calibration.check(List.of(), WATCHDOG_720, Duration.ofSeconds(239))).isEmpty();
  }

  @Test
  void extenderIntervalOfHalfTheExtensionOrMoreIsReported() {
    List<Calibration.Violation> v =
        check(
            workedExample()
                .leaseExtender(
                    LeaseExtenderConfig.of(Duration.ofSeconds(150), Duration.ofSeconds(300)))
                .build());

    assertThat(v).extracting(Calibration.Violation::rule).containsExactly(Calibration.EXTENSION_INTERVAL);
    assertThat(v.get(0).values()).contains("interval=150s").contains("extension=300s");
    assertThat(
            check(
                workedExample()
                    .leaseExtender(
                        LeaseExtenderConfig.of(Duration.ofMillis(149_999), Duration.ofSeconds(300)))
                    .build()))
        .isEmpty();
  }

  @Test
  void extensionNotBelowVisibilityIsReported() {
    MainLoopConfig config =
        workedExample()
            .visibilityTimeout(Duration.ofSeconds(1800))
            .leaseExtender(LeaseExtenderConfig.of(Duration.ofSeconds(60), Duration.ofSeconds(1800)))
            .build();

    List<Calibration.Violation> v = check(config);

    assertThat(v).extracting(Calibration.Violation::rule).containsExactly(Calibration.EXTENSION_BELOW_VISIBILITY);
    assertThat(v.get(0).values()).contains("extension=1800s").contains("visibility_timeout=1800s");
  }

  @Test
  void missingDeadlineCountsAsZeroProcessingTimeAndSaysSo() {
    MainLoopConfig noDeadline =
        workedExample().deadline(null).visibilityTimeout(Duration.ofSeconds(700)).build();

    List<Calibration.Violation> v = check(noDeadline);

    assertThat(v).extracting(Calibration.Violation::rule).containsExactly(Calibration.VISIBILITY_COVERS_WATCHDOG);
    assertThat(v.get(0).values()).contains("max_processing_time=0s (no deadline set, counted as 0)");
  }

  @Test
  void withoutWatchdogOnlyExtenderRulesApply() {
    MainLoopConfig config =
        workedExample()
            .visibilityTimeout(Duration.ofSeconds(60))
            .waitTime(Duration.ofSeconds(20))
            .leaseExtender(LeaseExtenderConfig.of(Duration.ofSeconds(10), Duration.ofSeconds(30)))
            .build();

    assertThat(
            Calibration.check(
                List.of(new FakeLoop("w").config(config)), Optional.empty(), Duration.ofHours(1)))
        .isEmpty();
  }

  @Test
  void disabledExtenderSkipsExtenderRules() {
    MainLoopConfig config =
        workedExample()
            .leaseExtender(
                new LeaseExtenderConfig(Duration.ofSeconds(200), Duration.ofSeconds(300), false))
            .visibilityTimeout(Duration.ofSeconds(1800))
            .build();

    assertThat(check(config)).isEmpty();
  }

  @Test
  void loopsWithoutConfigGetOnlyTheGroupRuleAndEveryViolationIsListed() {
    MainLoopConfig bad =
        workedExample()
            .visibilityTimeout(Duration.ofSeconds(400))
            .leaseExtender(LeaseExtenderConfig.of(Duration.ofSeconds(200), Duration.ofSeconds(300)))
            .build();

    List<Calibration.Violation> v =
        Calibration.check(
            List.of(new FakeLoop("plain"), new FakeLoop("bad").config(bad)),
            Optional.of(Duration.ofSeconds(500)),
            Duration.ofSeconds(200));

    assertThat(v)
        .extracting(Calibration.Violation::rule)
        .containsExactly(
            Calibration.WATCHDOG_INTERVAL,
            Calibration.VISIBILITY_COVERS_WATCHDOG,
            Calibration.WATCHDOG_COVERS_WORK,
            Calibration.EXTENSION_INTERVAL);
    assertThat(v.subList(1, 4)).allMatch(x -> x.loop().equals(Optional.of("bad")));
  }

  @Test
  void formatsDurationsInSeconds() {
    assertThat(Calibration.format(Duration.ofSeconds(720))).isEqualTo("720s");
    assertThat(Calibration.format(Duration.ofMillis(500))).isEqualTo("0.5s");
    assertThat(Calibration.format(Duration.ZERO)).isEqualTo("0s");
  }

  @Test
  void aLoopWithoutADeadlineIsReportedAsNotFullyCheckedNamingTheRules() {
    Calibration.Report report = Calibration.report(
        List.of(new FakeLoop("open-ended").config(MainLoopConfig.defaults()),
            new FakeLoop("bounded").config(workedExample().build())),
        WATCHDOG_720, INTERVAL_60);

    assertThat(report.violations()).isEmpty();
    assertThat(report.unchecked())
        .extracting(Calibration.Unchecked::loop, Calibration.Unchecked::rule)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("open-ended", Calibration.VISIBILITY_COVERS_WATCHDOG),
            org.assertj.core.groups.Tuple.tuple("open-ended", Calibration.WATCHDOG_COVERS_WORK));
    assertThat(report.unchecked().get(0).toString())
        .contains("loop 'open-ended'")
        .contains("not checked")
        .contains("MainLoopConfig.deadline");
  }

  @Test
  void withoutAWatchdogNoRuleNeedsAProcessingTime() {
    Calibration.Report report = Calibration.report(
        List.of(new FakeLoop("open-ended").config(MainLoopConfig.defaults())),
        Optional.empty(), INTERVAL_60);
    assertThat(report.unchecked()).isEmpty();
  }

  @Test
  void aGroupThatFailsCalibrationAlsoSaysWhatItCouldNotCheck() {
    MainLoopConfig bad = MainLoopConfig.defaults().toBuilder()
        .leaseExtender(dev.tether.LeaseExtenderConfig.of(Duration.ofMinutes(3), Duration.ofMinutes(5)))
        .build();
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> LoopGroup.builder()
            .loop(new FakeLoop("w").config(bad))
            .handleSignals(false)
            .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(Calibration.EXTENSION_INTERVAL)
        .hasMessageContaining("Not checked")
        .hasMessageContaining(Calibration.VISIBILITY_COVERS_WATCHDOG);
  }
  @Test
  void aDeclaredSilentCallLongerThanTheLeaseIsSureToLastAfterABeatIsReported() {
    // the worked example: extension 300 s every 60 s, so 240 s are sure after any beat
    assertThat(check(workedExample().longestSilentCall(Duration.ofSeconds(239)).build())).isEmpty();

    List<Calibration.Violation> v =
        check(workedExample().longestSilentCall(Duration.ofSeconds(240)).build());

    assertThat(v).singleElement().satisfies(violation -> {
      assertThat(violation.rule()).isEqualTo(Calibration.SILENT_CALL_WITHIN_LEASE);
      assertThat(violation.loop()).hasValue("worker");
      assertThat(violation.values()).contains("longest_silent_call=240s", "extension=300s",
          "interval=60s", "only sure to last 240s", "above 300s");
    });
  }

  @Test
  void theVisibilityTimeoutBoundsASilentCallWhenItIsBelowTheExtension() {
    MainLoopConfig.Builder config = MainLoopConfig.builder()
        .visibilityTimeout(Duration.ofSeconds(90))
        .leaseExtender(LeaseExtenderConfig.of(Duration.ofSeconds(30), Duration.ofSeconds(80)));

    assertThat(Calibration.checkLoop("w", config.longestSilentCall(Duration.ofSeconds(49)).build(),
        Optional.empty())).isEmpty();
    assertThat(Calibration.checkLoop("w", config.longestSilentCall(Duration.ofSeconds(50)).build(),
        Optional.empty()))
        .extracting(Calibration.Violation::rule)
        .containsExactly(Calibration.SILENT_CALL_WITHIN_LEASE);
  }

  @Test
  void withoutExtensionASilentCallMustEndWithinTheVisibilityTimeout() {
    MainLoopConfig.Builder config = MainLoopConfig.builder()
        .visibilityTimeout(Duration.ofSeconds(60))
        .leaseExtender(LeaseExtenderConfig.disabled());

    assertThat(Calibration.checkLoop("w", config.longestSilentCall(Duration.ofSeconds(59)).build(),
        Optional.empty())).isEmpty();
    assertThat(Calibration.checkLoop("w", config.longestSilentCall(Duration.ofSeconds(60)).build(),
        Optional.empty()))
        .extracting(Calibration.Violation::rule)
        .containsExactly(Calibration.SILENT_CALL_WITHIN_VISIBILITY);
  }

  @Test
  void anUndeclaredSilentCallIsNotChecked() {
    MainLoopConfig config = MainLoopConfig.builder()
        .visibilityTimeout(Duration.ofSeconds(60))
        .leaseExtender(LeaseExtenderConfig.of(Duration.ofSeconds(20), Duration.ofSeconds(50)))
        .build();

    assertThat(config.longestSilentCall()).isEmpty();
    assertThat(Calibration.checkLoop("w", config, Optional.empty())).isEmpty();
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> MainLoopConfig.builder().longestSilentCall(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("longestSilentCall");
  }

  @Test
  void aLoopGroupWithASilentCallLongerThanTheLeaseFailsItsBuildNamingTheRule() {
    MainLoopConfig config = workedExample().longestSilentCall(Duration.ofMinutes(5)).build();

    org.assertj.core.api.Assertions.assertThatThrownBy(() -> LoopGroup.builder()
            .loop(new FakeLoop("agents").config(config))
            .handleSignals(false)
            .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("loop 'agents'")
        .hasMessageContaining(Calibration.SILENT_CALL_WITHIN_LEASE)
        .hasMessageContaining("longest_silent_call=300s");
  }
}
