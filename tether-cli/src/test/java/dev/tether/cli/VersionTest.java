package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** {@code tether --version}: the version and the git commit of the build. */
class VersionTest {
  private static String version(String... args) {
    StringWriter out = new StringWriter();
    int code = TetherCli.execute(args, new PrintWriter(out, true), new PrintWriter(new StringWriter(), true));
    assertThat(code).isZero();
    return out.toString().strip();
  }

  /** The commit of the checkout the tests run in, or null outside one (or without git). */
  static String headCommit(Path dir) throws IOException, InterruptedException {
    Process p;
    try {
      p = new ProcessBuilder("git", "rev-parse", "HEAD").directory(dir.toFile()).redirectErrorStream(true).start();
    } catch (IOException e) {
      return null; // no git command
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    return p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0 ? out : null;
  }

  @Test
  void versionNamesTheProjectVersionAndTheCommitOfTheBuild() throws Exception {
    String line = version("--version");
    assertThat(line).matches("tether 0\\.1\\.0-SNAPSHOT \\(commit ([0-9a-f]{7,40}|unknown)\\)");
    String head = headCommit(Path.of(System.getProperty("basedir", System.getProperty("user.dir"))));
    if (head != null) { // built from this checkout: the commit it was built from
      String commit = line.replaceAll(".*\\(commit ([^)]*)\\)", "$1");
      assertThat(head).as("HEAD of the checkout").startsWith(commit);
    }
  }

  @Test
  void everySubcommandPrintsTheSameVersion() {
    String top = version("--version");
    assertThat(version("worker", "--version")).isEqualTo(top);
    assertThat(version("ls", "--version")).isEqualTo(top);
  }

  @Test
  void aValueTheBuildCouldNotFillIsUnknown() {
    assertThat(TetherCli.Version.line(props("version=1.2.3\ncommit=abc1234\n")))
        .isEqualTo("tether 1.2.3 (commit abc1234)");
    assertThat(TetherCli.Version.line(props("version=1.2.3\ncommit=${tether.commit}\n")))
        .isEqualTo("tether 1.2.3 (commit unknown)");
    assertThat(TetherCli.Version.line(props("version=1.2.3\ncommit=\n")))
        .isEqualTo("tether 1.2.3 (commit unknown)");
    assertThat(TetherCli.Version.line(null)).isEqualTo("tether unknown (commit unknown)");
  }

  private static ByteArrayInputStream props(String text) {
    return new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8));
  }
}
