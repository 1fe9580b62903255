package dev.tether.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.tether.jdbc.TetherStore;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The README's mounting example, as written, answers on its context path only. */
class MountExampleTest {
  @TempDir Path dir;

  @Test
  void theReadmeExampleServesThePageAndTheApiUnderItsContextPath() throws Exception {
    try (TetherStore store = TetherStore.open(dir.resolve("m.db").toString())) {
      HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
      server.createContext("/tether/", TetherDashboard.builder(store)
          .token(System.getenv("TETHER_TOKEN"))
          .build());
      server.start();
      try {
        HttpClient http = HttpClient.newHttpClient();
        String base = "http://127.0.0.1:" + server.getAddress().getPort();
        HttpResponse<String> page = http.send(HttpRequest.newBuilder(URI.create(base + "/tether/")).build(),
            HttpResponse.BodyHandlers.ofString());
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.body()).contains("fetch(\"api/");
        HttpResponse<String> state = http.send(HttpRequest.newBuilder(URI.create(base + "/tether/api/state")).build(),
            HttpResponse.BodyHandlers.ofString());
        assertThat(state.statusCode()).isEqualTo(200);
        assertThat(state.body()).contains("\"totals\"").contains("\"workers\":[]");
        assertThat(http.send(HttpRequest.newBuilder(URI.create(base + "/api/state")).build(),
            HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(404);
      } finally {
        server.stop(0);
      }
    }
  }
}
