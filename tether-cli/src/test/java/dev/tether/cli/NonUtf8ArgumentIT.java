package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * An argument whose bytes are not UTF-8, passed by a real shell to the real jar, is refused with
 * one line and exit status 2, and nothing is stored (before, it was stored with U+FFFD).
 */
@Timeout(120)
class NonUtf8ArgumentIT {
  @TempDir Path dir;

  @Test
  void anArgumentThatIsNotUtf8IsRefused() throws Exception {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    Path db = dir.resolve("t.db");
    ProcessBuilder pb = new ProcessBuilder("/bin/sh", "-c",
        "exec \"$0\" -jar \"$1\" enqueue --db \"$2\" -- echo \"$(printf 'caf\\351')\"",
        java.toString(), JarRunner.JAR.toString(), db.toString())
        .redirectOutput(dir.resolve("out").toFile()).redirectError(dir.resolve("err").toFile());
    pb.environment().put("LC_ALL", "C.UTF-8");
    Process p = pb.start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    String err = Files.readString(dir.resolve("err"), StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as(err).isEqualTo(2);
    assertThat(err.strip()).doesNotContain("\n")
        .startsWith("tether enqueue: error: argument 2 is not valid UTF-8");
    assertThat(Files.readString(dir.resolve("out"))).isEmpty();
    assertThat(Files.exists(db)).as("nothing stored, no store created").isFalse();
  }
}
