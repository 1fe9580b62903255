package dev.tether.jdbc;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Comparator;
import java.util.Locale;
import java.util.UUID;
import java.util.stream.Stream;

/**
 * A fresh, isolated database for one test: a temp SQLite file, or a new PostgreSQL schema
 * (dropped on close) on the server named by {@code TETHER_TEST_PG_URL}.
 */
abstract class TestDatabase implements AutoCloseable {
  static final String PG_URL_ENV = "TETHER_TEST_PG_URL";
  static final String DEFAULT_PG_URL = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";

  /** The URL (or path) a store or a child process opens. */
  abstract String url();

  /** Opens a store on this database. */
  TetherStore open(TetherStoreConfig config) {
    return TetherStore.open(url(), config);
  }

  @Override
  public abstract void close();

  static TestDatabase sqlite() {
    return new Sqlite();
  }

  static TestDatabase postgres() {
    return new Postgres();
  }

  static final class Sqlite extends TestDatabase {
    private final Path dir;

    Sqlite() {
      try {
        dir = Files.createTempDirectory("tether-sqlite-test");
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    String url() {
      return dir.resolve("tether.db").toString();
    }

    @Override
    public void close() {
      try (Stream<Path> s = Files.walk(dir)) {
        s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException e) {
        // temp files; nothing to do
      }
    }
  }

  static final class Postgres extends TestDatabase {
    private final String baseUrl;
    private final String schema;

    Postgres() {
      String env = System.getenv(PG_URL_ENV);
      baseUrl = env == null || env.isBlank() ? DEFAULT_PG_URL : env;
      schema = "tether_t_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16).toLowerCase(Locale.ROOT);
      try (Connection c = DriverManager.getConnection(baseUrl); Statement st = c.createStatement()) {
        st.execute("CREATE SCHEMA " + schema);
      } catch (SQLException e) {
        throw new AssertionError(
            "PostgreSQL is required for this test and could not be reached at " + baseUrl + " ("
                + e.getMessage() + "). Start a PostgreSQL server, or set the environment variable "
                + PG_URL_ENV + " to a JDBC URL of one (for example "
                + "jdbc:postgresql://host:5432/db?user=u&password=p)", e);
      }
    }

    @Override
    String url() {
      return baseUrl + (baseUrl.contains("?") ? "&" : "?") + "currentSchema=" + schema;
    }

    @Override
    public void close() {
      try (Connection c = DriverManager.getConnection(baseUrl); Statement st = c.createStatement()) {
        st.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
      } catch (SQLException e) {
        throw new AssertionError("could not drop test schema " + schema, e);
      }
    }
  }
}
