package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.jdbc.PostgresTestSchema;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Read-only commands never create anything on PostgreSQL: on an empty schema each says there is
 * no Tether store there, with one line and exit status 1, and the schema stays empty.
 */
@Timeout(120)
class ReadOnlyPostgresIT {
  @TempDir Path dir;

  @Test
  void readOnlyCommandsOnAnEmptyDatabaseCreateNothingAndSaySo() throws Exception {
    try (PostgresTestSchema schema = new PostgresTestSchema("tether_ro_")) {
      JarRunner t = new JarRunner(dir, schema.url());
      String[][] commands = {
        {"ls"}, {"inspect", "1"}, {"stats"}, {"logs", "1"}, {"ls", "--json"}, {"stats", "--json"},
        {"workers"}, {"workers", "--json"}
      };
      for (String[] args : commands) {
        JarRunner.Proc p = t.start(args);
        assertThat(p.waitFor(60)).as(String.join(" ", args) + ": " + p.err()).isEqualTo(1);
        assertThat(p.err().strip()).as(String.join(" ", args))
            .startsWith("tether " + args[0] + ": error: no Tether store at ")
            .doesNotContain("\n");
        assertThat(p.out()).isEmpty();
      }
      try (Connection c = DriverManager.getConnection(schema.url());
          PreparedStatement ps = c.prepareStatement(
              "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ?")) {
        ps.setString(1, schema.name());
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          assertThat(rs.getInt(1)).isZero();
        }
      }
      // a command that writes still creates the store
      assertThat(t.run("enqueue", "--", "true").strip()).isEqualTo("1");
      assertThat(t.run("ls")).contains("true");
    }
  }
}
