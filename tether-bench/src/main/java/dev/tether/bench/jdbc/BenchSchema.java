package dev.tether.bench.jdbc;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;

/**
 * A fresh PostgreSQL schema for one benchmark run, dropped (with everything in it) on {@link
 * #close()}. The server is {@code TETHER_TEST_PG_URL}, as for the tests (default {@value
 * #DEFAULT_URL}).
 */
final class BenchSchema implements AutoCloseable {
  static final String DEFAULT_URL = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";

  private final String baseUrl;
  private final String name;

  private BenchSchema(String baseUrl, String name) {
    this.baseUrl = baseUrl;
    this.name = name;
  }

  /** The server's URL: {@code TETHER_TEST_PG_URL}, or {@value #DEFAULT_URL}. */
  static String baseUrl() {
    return System.getenv().getOrDefault("TETHER_TEST_PG_URL", DEFAULT_URL);
  }

  /** Creates a schema named {@code prefix} and 8 random hex digits. */
  static BenchSchema create(String prefix) throws SQLException {
    BenchSchema s = new BenchSchema(baseUrl(), prefix + UUID.randomUUID().toString().substring(0, 8));
    try (Connection c = s.connect(); Statement st = c.createStatement()) {
      st.execute("CREATE SCHEMA " + s.name);
    }
    return s;
  }

  String name() {
    return name;
  }

  /** The URL of the schema: the server's, with {@code currentSchema} set. */
  String url() {
    return baseUrl + (baseUrl.contains("?") ? "&" : "?") + "currentSchema=" + name;
  }

  /** A connection to the server (its default schema). */
  Connection connect() throws SQLException {
    return DriverManager.getConnection(baseUrl);
  }

  @Override
  public void close() throws SQLException {
    try (Connection c = connect(); Statement st = c.createStatement()) {
      st.execute("DROP SCHEMA " + name + " CASCADE");
    }
  }
}
