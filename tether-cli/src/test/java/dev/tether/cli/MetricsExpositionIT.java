package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real worker's {@code /metrics} under load, checked by Prometheus's own parser and linter
 * ({@code promtool check metrics}): it must report nothing. And the check itself fails on a
 * malformed exposition, so a pass means something.
 */
@Timeout(180)
class MetricsExpositionIT {
  @TempDir Path dir;

  private static final HttpClient HTTP = HttpClient.newHttpClient();

  private static HttpResponse<String> request(String method, String url) throws Exception {
    return HTTP.send(HttpRequest.newBuilder(URI.create(url)).method(method, HttpRequest.BodyPublishers.noBody()).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static int portFrom(JarRunner.Proc p) {
    Matcher m = Pattern.compile("dashboard: http://127\\.0\\.0\\.1:(\\d+)/").matcher(p.out());
    return m.find() ? Integer.parseInt(m.group(1)) : -1;
  }

  @Test
  void workerMetricsUnderLoadPassPromtoolWithNothingReported() throws Exception {
    JarRunner t = new JarRunner(dir);
    // beating commands (extensions) and quick ones, then failing ones (dead letters): 12 each,
    // two `enqueue --file` runs rather than 36 JVM starts
    StringBuilder ok = new StringBuilder();
    StringBuilder failing = new StringBuilder();
    for (int i = 0; i < 12; i++) {
      ok.append("sh -c 'for i in 1 2 3 4 5 6; do echo $i; sleep 0.3; done'\ntrue\n");
      failing.append("sh -c 'echo no; exit 3'\n");
    }
    Path okFile = Files.writeString(dir.resolve("ok.txt"), ok);
    Path failingFile = Files.writeString(dir.resolve("failing.txt"), failing);
    t.run("enqueue", "--file", okFile.toString());
    t.run("enqueue", "--max-attempts", "1", "--file", failingFile.toString());
    JarRunner.Proc w = t.start(JarRunner.shortLeaseWorker("--concurrency", "4",
        "--health-port", "0", "--store-metrics"));
    try {
      await().atMost(Duration.ofSeconds(30)).until(() -> portFrom(w) > 0);
      String metrics = "http://127.0.0.1:" + portFrom(w) + "/metrics";
      // under load: while items are being handled
      await().atMost(Duration.ofSeconds(30)).until(() -> request("GET", metrics).body()
          .matches("(?s).*tether_items_in_flight\\{queue=\"default\"} [1-9].*"));
      String busy = request("GET", metrics).body();
      assertThat(Promtool.check(busy)).isEmpty();
      await().atMost(Duration.ofSeconds(60)).until(() -> request("GET", metrics).body()
          .matches("(?s).*tether_queue_items\\{queue=\"default\",status=\"completed\"} 24(\\.0)?\n.*"));
      String done = request("GET", metrics).body();
      assertThat(Promtool.check(done)).isEmpty();
      assertThat(done)
          .containsPattern("tether_handler_duration_seconds_count\\{outcome=\"success\",queue=\"default\",type=\"none\"} 24")
          .containsPattern("tether_dead_letters_total\\{queue=\"default\",type=\"none\"} 12")
          .containsPattern("tether_lease_extensions_total\\{queue=\"default\",type=\"none\"} [1-9]")
          .containsPattern("tether_commands_succeeded_total 24")
          .containsPattern("tether_loop_heartbeat_age_seconds\\{loop=\"w4\"}")
          .containsPattern("tether_sweep_scans_total [1-9]")
          .containsPattern("tether_queue_items\\{queue=\"default\",status=\"failed\"} 12")
          .doesNotContain("tether_checkpoints_total{kind=");

      // HEAD: the headers of a GET, no body, and nothing logged
      String outBefore = w.out();
      String errBefore = w.err();
      HttpResponse<String> head = request("HEAD", metrics);
      assertThat(head.statusCode()).isEqualTo(200);
      assertThat(head.body()).isEmpty();
      assertThat(head.headers().firstValue("Content-Type").orElse("")).startsWith("text/plain; version=0.0.4");
      assertThat(request("GET", "http://127.0.0.1:" + portFrom(w) + "/health/live").statusCode()).isEqualTo(200);
      assertThat(w.out()).isEqualTo(outBefore);
      assertThat(w.err()).isEqualTo(errBefore);
    } finally {
      JarRunner.term(w);
      w.waitFor(30);
    }
  }

  @Test
  void theCheckFailsOnAMalformedLine() throws Exception {
    String good = "# HELP tether_x_total A counter.\n# TYPE tether_x_total counter\ntether_x_total 1\n";
    assertThat(Promtool.check(good)).isEmpty();
    assertThatThrownBy(() -> Promtool.check(good + "tether_x_total{queue=\"a\" 2\n"))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("parsing error");
  }
}
