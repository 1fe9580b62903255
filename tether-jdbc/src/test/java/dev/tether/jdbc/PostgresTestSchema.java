package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;

/**
 * A fresh PostgreSQL schema for one test, on the server named by the environment variable
 * {@value #PG_URL_ENV} (default {@value #DEFAULT_PG_URL}), dropped on close. An unreachable server
 * fails the test with a message saying how to provide one; it never skips. Shared with other
 * modules' tests through this module's test-jar.
 */
public final class PostgresTestSchema implements AutoCloseable {
  /** The environment variable naming the test server's JDBC URL. */
  public static final String PG_URL_ENV = "TETHER_TEST_PG_URL";

  /** The URL used when {@link #PG_URL_ENV} is unset. */
  public static final String DEFAULT_PG_URL = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";

  private final String baseUrl;
  private final String schema;

  /**
   * Creates a schema named {@code prefix} plus 16 random hex digits.
   *
   * @param prefix a lowercase SQL identifier prefix, such as {@code tether_t_}
   * @throws AssertionError if the server cannot be reached (with how to provide one)
   */
  public PostgresTestSchema(String prefix) {
    String env = System.getenv(PG_URL_ENV);
    baseUrl = env == null || env.isBlank() ? DEFAULT_PG_URL : env.strip();
    schema = prefix + UUID.randomUUID().toString().replace("-", "").substring(0, 16).toLowerCase(Locale.ROOT);
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

  /**
   * Returns the JDBC URL of the schema ({@code currentSchema=...}), for a store or {@code --db}.
   *
   * @return the URL
   */
  public String url() {
    return baseUrl + (baseUrl.contains("?") ? "&" : "?") + "currentSchema=" + schema;
  }

  /**
   * Returns the server's URL without the schema.
   *
   * @return the base URL
   */
  public String baseUrl() {
    return baseUrl;
  }

  /**
   * Returns the schema's name.
   *
   * @return the name
   */
  public String name() {
    return schema;
  }

  /** Drops the schema and everything in it. */
  @Override
  public void close() {
    try (Connection c = DriverManager.getConnection(baseUrl); Statement st = c.createStatement()) {
      st.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    } catch (SQLException e) {
      throw new AssertionError("could not drop test schema " + schema + " at " + baseUrl, e);
    }
  }
}
