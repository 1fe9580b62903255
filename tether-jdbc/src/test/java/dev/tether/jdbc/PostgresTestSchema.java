package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;

/**
 * A fresh PostgreSQL schema for one test, on the server {@link TestPostgres} chose for this JVM
 * ({@code TETHER_TEST_PG_URL}, else the local server on 127.0.0.1:5432, else an embedded one),
 * dropped on close. A server that cannot be used fails the test with a message saying how to
 * provide one; it never skips. Shared with other modules' tests through this module's test-jar.
 */
public final class PostgresTestSchema implements AutoCloseable {
  private final String baseUrl;
  private final String schema;

  /**
   * Creates a schema named {@code prefix} plus 16 random hex digits.
   *
   * @param prefix a lowercase SQL identifier prefix, such as {@code tether_t_}
   * @throws AssertionError if the server cannot be reached (with how to provide one)
   */
  public PostgresTestSchema(String prefix) {
    baseUrl = TestPostgres.url();
    schema = prefix + UUID.randomUUID().toString().replace("-", "").substring(0, 16).toLowerCase(Locale.ROOT);
    try (Connection c = DriverManager.getConnection(baseUrl); Statement st = c.createStatement()) {
      st.execute("CREATE SCHEMA " + schema);
    } catch (SQLException e) {
      throw new AssertionError(TestPostgres.unreachable(e), e);
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
      throw new AssertionError("could not drop test schema " + schema + " at "
          + TestPostgres.masked(baseUrl), e);
    }
  }
}
