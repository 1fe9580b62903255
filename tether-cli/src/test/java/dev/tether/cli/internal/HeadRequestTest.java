package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.health.HealthServer;
import dev.tether.jdbc.TetherStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A HEAD request (a load balancer's or a curl -I) is answered without a body and logs nothing. */
class HeadRequestTest {
  @TempDir Path dir;

  @Test
  void headOfMetricsAndThePageAnswersWithoutLoggingAWarning() throws Exception {
    List<LogRecord> warnings = new CopyOnWriteArrayList<>();
    Handler capture = new Handler() {
      @Override
      public void publish(LogRecord r) {
        if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
          warnings.add(r);
        }
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    Logger jdkServer = Logger.getLogger("com.sun.net.httpserver");
    jdkServer.addHandler(capture);
    try (TetherStore store = TetherStore.open(dir.resolve("d.db").toString())) {
      HealthServer server = new Dashboard(store, "s3cret", null, new WorkerMetrics())
          .start("127.0.0.1", 0, () -> true);
      try {
        HttpClient http = HttpClient.newHttpClient();
        for (String path : List.of("/metrics", "/", "/api/state")) {
          HttpResponse<String> r = http.send(HttpRequest.newBuilder(
                  URI.create("http://127.0.0.1:" + server.address().getPort() + path))
              .header("X-Tether-Token", "s3cret")
              .method("HEAD", HttpRequest.BodyPublishers.noBody()).build(),
              HttpResponse.BodyHandlers.ofString());
          assertThat(r.statusCode()).as(path).isEqualTo(200);
          assertThat(r.body()).as(path).isEmpty();
        }
      } finally {
        server.stop();
      }
    } finally {
      jdkServer.removeHandler(capture);
    }
    assertThat(warnings).extracting(LogRecord::getMessage).isEmpty();
  }
}
