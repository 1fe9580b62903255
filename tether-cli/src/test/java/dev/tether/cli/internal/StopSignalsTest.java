package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * SIGTERM as a stop request that the command handles itself. Signals go to this test's own JVM,
 * only while {@link StopSignals#handles} says the handler is there (else the JVM would exit).
 */
@Timeout(30)
class StopSignalsTest {
  private static void signalSelf(String name) throws Exception {
    Process kill =
        new ProcessBuilder("kill", "-" + name, Long.toString(ProcessHandle.current().pid()))
            .inheritIO()
            .start();
    assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(kill.exitValue()).isZero();
  }

  @Test
  void sigtermReleasesTheWaiterAndIsNamedAndTheJvmKeepsRunning() throws Exception {
    try (StopSignals signals = StopSignals.install()) {
      assertThat(signals.handles("TERM")).as("SIGTERM handled by the CLI on this JVM").isTrue();
      assertThat(signals.awaitStop(Duration.ofMillis(50))).isFalse();
      assertThat(signals.signal()).isEmpty();

      signalSelf("TERM");
      assertThat(signals.awaitStop(Duration.ofSeconds(10))).isTrue();
      assertThat(signals.signal()).contains("TERM");

      signalSelf("TERM"); // a second one is only logged
      Thread.sleep(200);
      assertThat(signals.signal()).contains("TERM");
    }
  }

  @Test
  void stopReleasesTheWaiterWithoutASignal() throws Exception {
    try (StopSignals signals = StopSignals.install()) {
      signals.stop();
      assertThat(signals.awaitStop(Duration.ZERO)).isTrue();
      assertThat(signals.signal()).isEmpty();
    }
  }

  @Test
  void closeGivesTheSignalsBack() {
    StopSignals signals = StopSignals.install();
    assertThat(signals.handles("TERM")).isTrue();
    signals.close();
    assertThat(signals.handles("TERM")).isFalse();
    signals.close(); // idempotent
  }
}
