package dev.tether.cli;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;

/**
 * A fresh PostgreSQL schema on the server named by {@code TETHER_TEST_PG_URL} (default {@value
 * #DEFAULT_PG_URL}), dropped on close. An unreachable server fails the test with a message saying
 * how to provide one; it never skips.
 */
final class PgSchema implements AutoCloseable {
  static final String PG_URL_ENV = "TETHER_TEST_PG_URL";
  static final String DEFAULT_PG_URL = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";

  private final String baseUrl;
  private final String schema;

  PgSchema() {
    String env = System.getenv(PG_URL_ENV);
    baseUrl = env == null || env.isBlank() ? DEFAULT_PG_URL : env.strip();
    schema = "tether_cli_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16).toLowerCase(Locale.ROOT);
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

  /** The JDBC URL of the fresh schema ({@code currentSchema=...}), for {@code --db}/TETHER_DB. */
  String url() {
    return baseUrl + (baseUrl.contains("?") ? "&" : "?") + "currentSchema=" + schema;
  }

  @Override
  public void close() {
    try (Connection c = DriverManager.getConnection(baseUrl); Statement st = c.createStatement()) {
      st.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    } catch (SQLException e) {
      throw new AssertionError("could not drop test schema " + schema + " at " + baseUrl, e);
    }
  }
}
