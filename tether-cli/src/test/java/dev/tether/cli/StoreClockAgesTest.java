package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tether.cli.internal.Json;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Ages are computed on the store's clock and never negative: a heartbeat written by a worker
 * whose clock runs ahead of this machine's shows as age 0, not as a negative age.
 */
class StoreClockAgesTest {
  @TempDir Path dir;

  private String run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = TetherCli.execute(args, new PrintWriter(out, true), new PrintWriter(err, true));
    assertThat(code).as(err.toString()).isZero();
    return out.toString();
  }

  @Test
  void aHeartbeatFromAClockAheadIsAgeZero() throws Exception {
    String db = dir.resolve("t.db").toString();
    run("enqueue", "--db", db, "--", "sleep", "60");
    long ahead = System.currentTimeMillis() + 60_000;
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db);
        Statement st = c.createStatement()) {
      st.executeUpdate("UPDATE tether_work_items SET status = 'in_progress', lease_holder = 'w',"
          + " lease_token = 1, delivery_count = 1, attempts = 1, lease_acquired_at = " + ahead
          + ", heartbeat_at = " + ahead + ", output_at = " + ahead + ", output_delivery = 1,"
          + " stdout_tail = 'working', lease_expires_at = " + (ahead + 60_000) + " WHERE id = 1");
    }
    JsonNode stats = Json.MAPPER.readTree(run("stats", "--db", db, "--json"));
    JsonNode lease = stats.get("in_flight").get(0);
    assertThat(lease.get("heartbeat_age_ms").asLong()).isZero();
    assertThat(lease.get("output_age_ms").asLong()).isZero();
    JsonNode item = Json.MAPPER.readTree(run("inspect", "--db", db, "1", "--json"));
    assertThat(item.get("heartbeat_age_ms").asLong()).isZero();
    assertThat(item.get("output").get("output_age_ms").asLong()).isZero();
    assertThat(item.get("output").get("stdout_tail").asText()).isEqualTo("working");
  }
}
