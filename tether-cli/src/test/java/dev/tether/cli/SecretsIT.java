package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.jdbc.PostgresTestSchema;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A database password never shows in what the real jar prints: standard output, standard error
 * and its log lines, with and without {@code --verbose}, whether the password is in {@code --db}
 * ({@code password=} or {@code user:password@}), in {@code TETHER_DB}, in a password file or in
 * {@code PGPASSWORD}.
 */
@Timeout(120)
class SecretsIT {
  private static final String SECRET = "Sup3r-s3cret";

  @TempDir Path dir;

  record Run(int code, String out, String err) {
    String all() {
      return out + err;
    }
  }

  /** A port nothing listens on: connections are refused at once. */
  private static int closedPort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private Run tether(Map<String, String> env, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
        "-XX:TieredStopAtLevel=1", "-jar", JarRunner.JAR.toString()));
    cmd.addAll(List.of(args));
    Path out = Files.createTempFile(dir, "out", ".txt");
    Path err = Files.createTempFile(dir, "err", ".txt");
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile());
    pb.environment().remove("TETHER_DB");
    pb.environment().remove("PGPASSWORD");
    pb.environment().putAll(env);
    Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError(cmd + " did not end within 60 s: " + Files.readString(err));
    }
    return new Run(p.exitValue(), Files.readString(out), Files.readString(err));
  }

  private static void assertMasked(Run r, String maskedForm) {
    assertThat(r.code()).as("exit code; stderr: %s", r.err()).isEqualTo(1);
    assertThat(r.all()).as("everything printed").doesNotContain(SECRET);
    assertThat(r.err()).contains(maskedForm);
  }

  @Test
  void passwordInDbOnAClosedPortIsMaskedInEveryCommandAndLogLine() throws Exception {
    int port = closedPort();
    String db = "jdbc:postgresql://127.0.0.1:" + port + "/tether?user=tether&password=" + SECRET;
    String masked = "jdbc:postgresql://127.0.0.1:" + port + "/tether?user=tether&password=***";
    for (String[] args : List.of(
        new String[] {"ls", "--db", db},
        new String[] {"ls", "--db", db, "--verbose"},
        new String[] {"worker", "--db", db},
        new String[] {"worker", "--db", db, "--verbose"},
        new String[] {"serve", "--db", db, "--port", "0", "--verbose"},
        new String[] {"enqueue", "--db", db, "--verbose", "--", "true"})) {
      assertMasked(tether(Map.of(), args), masked);
    }
    // the same from the environment
    assertMasked(tether(Map.of("TETHER_DB", db), "stats", "--verbose"), masked);
  }

  @Test
  void userinfoPasswordOnAClosedPortIsMasked() throws Exception {
    int port = closedPort();
    String db = "jdbc:postgresql://tether:" + SECRET + "@127.0.0.1:" + port + "/tether";
    Run r = tether(Map.of(), "worker", "--db", db, "--verbose");
    assertMasked(r, "jdbc:postgresql://tether:***@127.0.0.1:" + port + "/tether");
    // a URL of a kind Tether does not take is echoed masked too
    Run other = tether(Map.of(), "ls", "--db", "postgres://tether:" + SECRET + "@127.0.0.1:" + port + "/tether");
    assertMasked(other, "postgres://tether:***@127.0.0.1:");
  }

  @Test
  void passwordFromAFileOrPgpasswordOnAClosedPortIsNeverPrinted() throws Exception {
    int port = closedPort();
    String db = "jdbc:postgresql://127.0.0.1:" + port + "/tether?user=tether";
    Path file = dir.resolve("db-password");
    Files.writeString(file, SECRET + "\n");
    Run fromFile = tether(Map.of(), "worker", "--db", db, "--db-password-file", file.toString(), "--verbose");
    assertMasked(fromFile, "cannot open --db " + db + ":");
    Run fromEnv = tether(Map.of("PGPASSWORD", SECRET), "ls", "--db", db, "--verbose");
    assertMasked(fromEnv, "cannot open --db " + db + ":");
  }

  @Test
  void workerOnALiveDatabaseShowsTheStoreMaskedInItsBannerAndLog() throws Exception {
    // the local server trusts 127.0.0.1, so the password is sent and not checked
    try (PostgresTestSchema schema = new PostgresTestSchema("tether_cli_")) {
      String db = schema.url() + "&password=" + SECRET;
      JarRunner t = new JarRunner(dir, db);
      JarRunner.Proc w = t.start("worker", "--verbose");
      await().atMost(Duration.ofSeconds(30)).until(() -> w.out().startsWith("worker ") || !w.process.isAlive());
      JarRunner.term(w);
      assertThat(w.waitFor(20)).as(w.err()).isZero();
      assertThat(w.out()).contains("(store " + schema.url() + "&password=***)");
      assertThat(w.err()).contains("Opened Tether store on").contains("password=***");
      assertThat(w.out() + w.err()).doesNotContain(SECRET);
    }
  }
}
