package dev.tether.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.Locale;

/**
 * The SQL differences between the supported engines: how instants are stored, how rows are
 * locked for picking, how write transactions begin. Internal: not part of the public API.
 *
 * <p>Instants are stored at millisecond resolution on both engines (PostgreSQL {@code
 * timestamptz}, SQLite integer epoch milliseconds); every instant is truncated to milliseconds
 * before it is bound so that a value read back equals the value written.
 */
public enum Dialect {
  /** SQLite: integer epoch millis, writes serialized with {@code BEGIN IMMEDIATE}. */
  SQLITE,
  /** PostgreSQL: {@code timestamptz}, {@code FOR UPDATE SKIP LOCKED}, database clock. */
  POSTGRES;

  /**
   * Detects the dialect from a JDBC URL.
   *
   * @param url a JDBC URL
   * @return the dialect
   * @throws IllegalArgumentException if the URL names neither SQLite nor PostgreSQL
   */
  public static Dialect fromUrl(String url) {
    String lower = url.toLowerCase(Locale.ROOT);
    if (lower.startsWith("jdbc:sqlite:")) {
      return SQLITE;
    }
    if (lower.startsWith("jdbc:postgresql:")) {
      return POSTGRES;
    }
    throw new IllegalArgumentException(
        "unsupported JDBC URL '"
            + url
            + "': Tether supports jdbc:sqlite:..., jdbc:postgresql://... or a bare SQLite file path");
  }

  /**
   * Detects the dialect from a connection's metadata.
   *
   * @param connection an open connection
   * @return the dialect
   * @throws SQLException if the metadata cannot be read
   * @throws IllegalArgumentException if the product is neither SQLite nor PostgreSQL
   */
  public static Dialect fromConnection(Connection connection) throws SQLException {
    String product = connection.getMetaData().getDatabaseProductName();
    String lower = product.toLowerCase(Locale.ROOT);
    if (lower.contains("sqlite")) {
      return SQLITE;
    }
    if (lower.contains("postgres")) {
      return POSTGRES;
    }
    throw new IllegalArgumentException(
        "unsupported database product '" + product + "': Tether supports SQLite and PostgreSQL");
  }

  /**
   * Returns the clause appended to a pick query to lock the rows it returns, skipping rows other
   * transactions hold.
   *
   * @return the clause, possibly empty
   */
  public String skipLocked() {
    return this == POSTGRES ? " FOR UPDATE SKIP LOCKED" : "";
  }

  /**
   * Truncates an instant to the stored resolution.
   *
   * @param instant the instant
   * @return the instant truncated to milliseconds
   */
  public static Instant truncate(Instant instant) {
    return instant.truncatedTo(ChronoUnit.MILLIS);
  }

  /**
   * Binds an instant (or SQL NULL).
   *
   * @param ps the statement
   * @param index the parameter index
   * @param instant the instant, or null
   * @throws SQLException on a driver error
   */
  public void setInstant(PreparedStatement ps, int index, Instant instant) throws SQLException {
    if (this == POSTGRES) {
      if (instant == null) {
        ps.setNull(index, Types.TIMESTAMP_WITH_TIMEZONE);
      } else {
        ps.setObject(index, OffsetDateTime.ofInstant(truncate(instant), ZoneOffset.UTC));
      }
    } else {
      if (instant == null) {
        ps.setNull(index, Types.BIGINT);
      } else {
        ps.setLong(index, instant.toEpochMilli());
      }
    }
  }

  /**
   * Reads an instant column.
   *
   * @param rs the result set
   * @param column the column label
   * @return the instant, or null for SQL NULL
   * @throws SQLException on a driver error
   */
  public Instant getInstant(ResultSet rs, String column) throws SQLException {
    if (this == POSTGRES) {
      OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
      return t == null ? null : t.toInstant();
    }
    long millis = rs.getLong(column);
    return rs.wasNull() ? null : Instant.ofEpochMilli(millis);
  }

  /**
   * Binds a nullable long.
   *
   * @param ps the statement
   * @param index the parameter index
   * @param value the value, or null
   * @throws SQLException on a driver error
   */
  public static void setLongOrNull(PreparedStatement ps, int index, Long value)
      throws SQLException {
    if (value == null) {
      ps.setNull(index, Types.BIGINT);
    } else {
      ps.setLong(index, value);
    }
  }

  /**
   * Reads a nullable long column.
   *
   * @param rs the result set
   * @param column the column label
   * @return the value, or null
   * @throws SQLException on a driver error
   */
  public static Long getLongOrNull(ResultSet rs, String column) throws SQLException {
    long v = rs.getLong(column);
    return rs.wasNull() ? null : v;
  }

  /**
   * Binds nullable bytes.
   *
   * @param ps the statement
   * @param index the parameter index
   * @param bytes the bytes, or null
   * @throws SQLException on a driver error
   */
  public void setBytes(PreparedStatement ps, int index, byte[] bytes) throws SQLException {
    if (bytes == null) {
      ps.setNull(index, this == POSTGRES ? Types.BINARY : Types.BLOB);
    } else {
      ps.setBytes(index, bytes);
    }
  }

  /**
   * Reads the database's current time, for PostgreSQL {@code clock_timestamp()} (the wall time
   * of the call, not of the transaction start).
   *
   * @param connection the connection
   * @return the database's current instant, truncated to milliseconds
   * @throws SQLException on a driver error
   * @throws UnsupportedOperationException on SQLite, which has no separate clock
   */
  public Instant databaseNow(Connection connection) throws SQLException {
    if (this != POSTGRES) {
      throw new UnsupportedOperationException("SQLite has no database clock; use the system clock");
    }
    try (Statement st = connection.createStatement();
        ResultSet rs = st.executeQuery("SELECT clock_timestamp()")) {
      rs.next();
      return truncate(rs.getObject(1, OffsetDateTime.class).toInstant());
    }
  }
}
