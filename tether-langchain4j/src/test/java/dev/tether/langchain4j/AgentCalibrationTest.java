package dev.tether.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tether.LeaseExtenderConfig;
import dev.tether.loop.Calibration;
import dev.tether.loop.LoopGroup;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.mailbox.InMemoryMailbox;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class AgentCalibrationTest {
  private static MainLoopConfig config(Duration visibility, Duration interval, Duration extension) {
    return MainLoopConfig.builder()
        .visibilityTimeout(visibility)
        .leaseExtender(LeaseExtenderConfig.of(interval, extension))
        .build();
  }

  @Test
  void aModelCallLongerThanTheLeaseSurelyLastsAfterABeatIsReported() {
    // extension 60 s every 30 s: after a beat that did not extend, only 30 s are sure
    MainLoopConfig config = config(Duration.ofMinutes(10), Duration.ofSeconds(30), Duration.ofSeconds(60));

    List<Calibration.Violation> violations =
        AgentCalibration.check("agents", config, Duration.ofSeconds(45));

    assertThat(violations).singleElement().satisfies(v -> {
      assertThat(v.rule()).isEqualTo(AgentCalibration.MODEL_CALL_WITHIN_LEASE);
      assertThat(v.loop()).contains("agents");
      assertThat(v.values()).contains("longest_silent_call=45s", "extension=60s", "interval=30s",
          "only sure to last 30s", "above 75s");
    });
  }

  @Test
  void eachViolationIsLoggedAsAWarning() {
    MainLoopConfig config = config(Duration.ofMinutes(10), Duration.ofSeconds(30), Duration.ofSeconds(60));
    PrintStream original = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      AgentCalibration.check("agents", config, Duration.ofSeconds(45));
    } finally {
      System.setErr(original);
    }

    assertThat(captured.toString(StandardCharsets.UTF_8))
        .contains("WARN", "loop 'agents'", AgentCalibration.MODEL_CALL_WITHIN_LEASE);
  }

  @Test
  void theVisibilityTimeoutBoundsTheFirstModelCall() {
    MainLoopConfig config = config(Duration.ofSeconds(90), Duration.ofSeconds(30), Duration.ofSeconds(80));

    assertThat(AgentCalibration.check("agents", config, Duration.ofSeconds(45))).isEmpty();
    assertThat(AgentCalibration.check("agents", config, Duration.ofSeconds(50)))
        .extracting(Calibration.Violation::rule)
        .containsExactly(AgentCalibration.MODEL_CALL_WITHIN_LEASE);
  }

  @Test
  void aCalibratedLoopPassesFromTheLoopItself() {
    MainLoopConfig config = config(Duration.ofMinutes(10), Duration.ofSeconds(30), Duration.ofMinutes(5));
    try (InMemoryMailbox<String, String> mailbox = InMemoryMailbox.<String, String>builder("q").build()) {
      MainLoop<String, String> loop = MainLoop.builder("agents", mailbox, (String t, dev.tether.loop.WorkContext c) -> t)
          .config(config).build();

      assertThat(AgentCalibration.check(loop, Duration.ofMinutes(2))).isEmpty();
      assertThat(AgentCalibration.check(loop, Duration.ofMinutes(5))).hasSize(1);
    }
  }

  @Test
  void withoutExtensionTheVisibilityTimeoutMustOutlastTheCall() {
    MainLoopConfig config = MainLoopConfig.builder()
        .visibilityTimeout(Duration.ofSeconds(60))
        .leaseExtender(LeaseExtenderConfig.disabled())
        .build();

    assertThat(AgentCalibration.check("agents", config, Duration.ofSeconds(90)))
        .extracting(Calibration.Violation::rule)
        .containsExactly(AgentCalibration.MODEL_CALL_WITHIN_VISIBILITY);
  }

  @Test
  void aDeadlineShorterThanOneModelCallIsReported() {
    MainLoopConfig config = config(Duration.ofMinutes(10), Duration.ofSeconds(30), Duration.ofMinutes(5))
        .toBuilder().deadline(Duration.ofSeconds(60)).build();

    assertThat(AgentCalibration.check("agents", config, Duration.ofSeconds(90)))
        .extracting(Calibration.Violation::rule)
        .containsExactly(AgentCalibration.MODEL_CALL_WITHIN_DEADLINE);
  }

  @Test
  void theLongestCallMustBePositive() {
    assertThatThrownBy(() -> AgentCalibration.check("agents", MainLoopConfig.defaults(), Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("longestModelCall");
  }
  @Test
  void aLongestModelCallDeclaredOnTheLoopIsWarnedAboutWhenTheLoopGroupIsBuilt() {
    // the normal setup path: declare the longest model call on the loop's configuration; the
    // group's calibration (here in WARN mode) logs the violation when it is built
    MainLoopConfig config = config(Duration.ofMinutes(10), Duration.ofSeconds(30), Duration.ofSeconds(60))
        .toBuilder().longestSilentCall(Duration.ofSeconds(45)).build();
    PrintStream original = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    try (InMemoryMailbox<String, String> mailbox = InMemoryMailbox.<String, String>builder("q").build()) {
      MainLoop<String, String> loop = MainLoop.builder("agents", mailbox, (String t, dev.tether.loop.WorkContext c) -> t)
          .config(config).build();
      System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
      try {
        LoopGroup.builder().loop(loop).noWatchdog().noHealthServer().handleSignals(false)
            .calibration(Calibration.Mode.WARN).build();
      } finally {
        System.setErr(original);
      }
      assertThat(captured.toString(StandardCharsets.UTF_8))
          .contains("WARN", "loop 'agents'", AgentCalibration.MODEL_CALL_WITHIN_LEASE,
              "longest_silent_call=45s", "only sure to last 30s");
      assertThat(AgentCalibration.check(loop, Duration.ofSeconds(45)))
          .as("the same rule, checked on its own")
          .extracting(Calibration.Violation::rule)
          .containsExactly(AgentCalibration.MODEL_CALL_WITHIN_LEASE);
    }
  }
}
