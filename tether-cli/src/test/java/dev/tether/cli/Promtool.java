package dev.tether.cli;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Checks a Prometheus text exposition with {@code promtool check metrics} (Prometheus's own parser
 * and linter; Debian's package prometheus, installed before the integration tests by {@code
 * src/test/scripts/ensure-debian-packages.sh}). Missing promtool fails the test that needs it, with what
 * to install; it never skips.
 */
final class Promtool {
  static final Path PATH = Path.of(System.getProperty("tether.promtool", "/usr/bin/promtool"));

  private Promtool() {}

  /**
   * Runs {@code promtool check metrics} on {@code exposition}.
   *
   * @return promtool's output (errors and lint problems); empty when the exposition is clean
   * @throws AssertionError if promtool is missing or exits non-zero (with its output)
   */
  static String check(String exposition) throws IOException, InterruptedException {
    if (!Files.isExecutable(PATH)) {
      throw new AssertionError("promtool not found at " + PATH + ": install Debian's package"
          + " prometheus (apt-get install prometheus; ensure-debian-packages.sh does it as root) or set"
          + " -Dtether.promtool=PATH");
    }
    Process p = new ProcessBuilder(PATH.toString(), "check", "metrics").redirectErrorStream(true).start();
    CompletableFuture<byte[]> output = CompletableFuture.supplyAsync(() -> readAll(p.getInputStream()));
    try (OutputStream in = p.getOutputStream()) {
      in.write(exposition.getBytes(StandardCharsets.UTF_8));
    }
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("promtool check metrics did not finish within 60 s");
    }
    String out = new String(output.join(), StandardCharsets.UTF_8);
    if (p.exitValue() != 0) {
      throw new AssertionError("promtool check metrics exited " + p.exitValue() + ":\n" + out);
    }
    return out;
  }

  private static byte[] readAll(InputStream in) {
    try (in; ByteArrayOutputStream b = new ByteArrayOutputStream()) {
      in.transferTo(b);
      return b.toByteArray();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
