package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.jdbc.PostgresTestSchema;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
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

  @Test
  void aDatabaseRefusalShowsTheDatabasesDetailAndHintBelowTheFirstLine() throws Exception {
    try (PostgresTestSchema schema = new PostgresTestSchema("tether_ml_")) {
      JarRunner t = new JarRunner(dir, schema.url());
      assertThat(t.run("enqueue", "--", "true").strip()).isEqualTo("1");
      try (Connection c = DriverManager.getConnection(schema.url());
          java.sql.Statement st = c.createStatement()) {
        st.execute("CREATE FUNCTION " + schema.name() + ".closed() RETURNS trigger LANGUAGE plpgsql AS $$"
            + " BEGIN RAISE EXCEPTION 'queue closed for maintenance' USING DETAIL = 'until 06:00 UTC',"
            + " HINT = 'enqueue to queue later'; END $$");
        st.execute("CREATE TRIGGER closed BEFORE INSERT ON " + schema.name() + ".tether_work_items"
            + " FOR EACH ROW EXECUTE FUNCTION " + schema.name() + ".closed()");
      }
      JarRunner.Proc p = t.start("enqueue", "--", "true");
      assertThat(p.waitFor(60)).as(p.err()).isEqualTo(1);
      String[] lines = p.err().strip().split("\n");
      assertThat(lines[0]).startsWith("tether enqueue: error: ").contains("queue closed for maintenance");
      assertThat(lines).anyMatch(l -> l.startsWith("  ") && l.contains("Detail: until 06:00 UTC"))
          .anyMatch(l -> l.startsWith("  ") && l.contains("Hint: enqueue to queue later"));
    }
  }

  @Test
  void aSchemaGivenAsAnOptionServesReadOnlyCommandsAndTheWorkersCommands() throws Exception {
    try (PostgresTestSchema schema = new PostgresTestSchema("tether_so_")) {
      // the URL names no schema: --schema alone says where Tether's tables are
      JarRunner t = new JarRunner(dir, schema.baseUrl());
      String[] inSchema = {"--schema", schema.name()};
      assertThat(t.run(with(inSchema, "enqueue", "--shell", "--",
          "\"$TETHER_CLI\" checkpoint step1 && echo done")).strip()).isEqualTo("1");
      // read-only commands looked in the URL's schema and said there was no store there
      assertThat(t.run(with(inSchema, "ls"))).contains("checkpoint step1");
      assertThat(t.run(with(inSchema, "stats"))).contains("PENDING");
      JarRunner.Proc worker = t.start(with(inSchema, JarRunner.shortLeaseWorker()));
      try {
        JarRunner.awaitWorkerStarted(worker);
        // the command's TETHER_DB named no schema: its checkpoint found no store and failed
        await().atMost(Duration.ofSeconds(60)).until(() -> !"pending".equals(status(schema, 1))
            && !"in_progress".equals(status(schema, 1)));
        assertThat(status(schema, 1)).as(worker.err()).isEqualTo("completed");
      } finally {
        JarRunner.term(worker);
        worker.waitFor(30);
      }
      assertThat(t.run(with(inSchema, "inspect", "1"))).contains("step1");
    }
  }

  /** {@code args} with {@code options} right after the subcommand (before any {@code --}). */
  private static String[] with(String[] options, String... args) {
    String[] all = new String[args.length + options.length];
    all[0] = args[0];
    System.arraycopy(options, 0, all, 1, options.length);
    System.arraycopy(args, 1, all, 1 + options.length, args.length - 1);
    return all;
  }

  private static String status(PostgresTestSchema schema, long id) throws Exception {
    try (Connection c = DriverManager.getConnection(schema.url());
        PreparedStatement ps = c.prepareStatement("SELECT status FROM tether_work_items WHERE id = ?")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getString(1) : null;
      }
    }
  }
}
