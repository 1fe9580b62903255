package dev.tether.loop;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Sends SIGTERM to a child JVM running a LoopGroup and checks the bounded graceful shutdown. */
class LoopGroupSignalTest {
  private static final int SIGTERM_EXIT = 143; // 128 + 15

  private static String testClassPath() {
    String cp = System.getProperty("surefire.test.class.path");
    return cp != null && !cp.isBlank() ? cp : System.getProperty("java.class.path");
  }

  private record Outcome(int exitCode, long exitMillisAfterSignal, String stderr) {}

  private static Outcome runAndTerminate(Path dir, String... args) throws Exception {
    Path err = dir.resolve("stderr.txt");
    String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    List<String> cmd = new ArrayList<>(List.of(java, "-XX:TieredStopAtLevel=1", "-cp", testClassPath(), LoopGroupSignalChildMain.class.getName()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectError(err.toFile()).start();
    try (BufferedReader out =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = out.readLine()) != null && !line.equals(LoopGroupSignalChildMain.STARTED)) {
        // skip
      }
      assertThat(line).as("child started its loop; stderr:\n%s", Files.readString(err)).isNotNull();
      long t0 = System.nanoTime();
      p.destroy(); // SIGTERM
      boolean exited = p.waitFor(10, TimeUnit.SECONDS);
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      if (!exited) {
        p.destroyForcibly();
      }
      assertThat(exited).as("child exits after SIGTERM; stderr:\n%s", Files.readString(err)).isTrue();
      return new Outcome(p.exitValue(), ms, Files.readString(err, StandardCharsets.UTF_8));
    }
  }

  @Test
  void sigtermStopsTheLoopsGracefully(@TempDir Path dir) throws Exception {
    Outcome o = runAndTerminate(dir);

    assertThat(o.exitCode()).isEqualTo(SIGTERM_EXIT);
    assertThat(o.stderr())
        .contains("JVM is shutting down")
        .contains("signalling 1 loops")
        .contains("Loop 'worker' stopped")
        .contains(LoopGroupSignalChildMain.AFTER_RUN)
        .doesNotContain("did not stop");
    assertThat(o.exitMillisAfterSignal()).isLessThan(3000);
  }

  @Test
  void sigtermWithAStuckLoopExitsAfterTheShutdownTimeoutNamingTheLoop(@TempDir Path dir)
      throws Exception {
    Outcome o = runAndTerminate(dir, "stuck");

    assertThat(o.exitCode()).isEqualTo(SIGTERM_EXIT);
    assertThat(o.stderr())
        .contains("signalling 1 loops")
        .contains("'tether-loop-worker' did not stop within the shutdown timeout of PT1S");
    System.out.println("stuck child exited " + o.exitMillisAfterSignal() + " ms after SIGTERM");
    assertThat(o.exitMillisAfterSignal()).isBetween(900L, 4000L);
  }

  @Test
  void aProgramThatCallsSystemExitAfterRunIsNotHeldUpByTheHook(@TempDir Path dir) throws Exception {
    // the hook waits for the thread that called run(); one that called System.exit waits for
    // the hook in turn
    Outcome o = runAndTerminate(dir, "exit");

    assertThat(o.exitCode()).isEqualTo(SIGTERM_EXIT);
    assertThat(o.stderr()).contains("Loop 'worker' stopped")
        .as("the hook did not wait out its grace for the exiting thread")
        .doesNotContain("which ran the loop group, still runs");
  }
}
