package dev.tether.health;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs a real child JVM whose only loop never beats, and checks that the watchdog halts it. */
class WatchdogProcessTest {

  static String testClassPath() {
    // Surefire may put only a manifest-only booter jar on java.class.path; it publishes the real
    // test class path separately.
    String cp = System.getProperty("surefire.test.class.path");
    return cp != null && !cp.isBlank() ? cp : System.getProperty("java.class.path");
  }

  @Test
  void stalledChildJvmIsHaltedWithExitStatusAndDiagnosticsButNoShutdownHooks(@TempDir Path dir)
      throws Exception {
    Path out = dir.resolve("stdout.txt");
    Path err = dir.resolve("stderr.txt");
    String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    ProcessBuilder pb =
        new ProcessBuilder(
                List.of(
                    java,
                    "-Xshare:auto",
                    "-XX:TieredStopAtLevel=1",
                    "-cp",
                    testClassPath(),
                    WatchdogChildMain.class.getName()))
            .redirectOutput(out.toFile())
            .redirectError(err.toFile());
    long start = System.nanoTime();
    Process p = pb.start();
    boolean exited = p.waitFor(8, TimeUnit.SECONDS);
    if (!exited) {
      p.destroyForcibly();
    }
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    String stderr = Files.readString(err, StandardCharsets.UTF_8);
    String stdout = Files.readString(out, StandardCharsets.UTF_8);
    System.out.println("child exited after " + tookMs + " ms; stderr:\n" + stderr);

    assertThat(exited).as("child exits by itself; stderr:\n%s", stderr).isTrue();
    assertThat(p.exitValue()).as("stderr:\n%s", stderr).isEqualTo(Watchdog.KILLED_EXIT_STATUS);
    assertThat(stderr)
        .contains("CRITICAL")
        .contains(WatchdogChildMain.LOOP_NAME)
        .contains("threshold 500 ms")
        .contains("\"main\"")
        .contains("WatchdogChildMain.sleepingInsideTheStuckLoop")
        .doesNotContain(WatchdogChildMain.HOOK_MARKER)
        .doesNotContain(WatchdogChildMain.SURVIVED_MARKER);
    assertThat(stdout)
        .doesNotContain(WatchdogChildMain.HOOK_MARKER)
        .doesNotContain(WatchdogChildMain.SURVIVED_MARKER);
  }
}
