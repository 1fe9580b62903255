package dev.tether.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Applies the versioned schema scripts under {@code dev/tether/jdbc/migrations/<engine>/} and
 * records each in {@code tether_schema_version}.
 *
 * <p>Safe when several processes start at once: the whole check-and-apply runs in one write
 * transaction under the engine's migration lock ({@link StoreEngine#lockMigrations}; both engines
 * have transactional DDL), so exactly one process applies each version and the others see it
 * applied. A database whose recorded version is newer than {@link #LATEST_VERSION} is refused
 * with {@link SchemaVersionException}.
 *
 * <p>What runs at all is the store's {@link TetherStoreConfig.SchemaMigration}: migrate, only
 * validate (nothing written; a missing, older or newer schema refused, naming the versions), or
 * nothing.
 */
final class Migrations {
  private static final Logger LOG = LoggerFactory.getLogger(Migrations.class);

  /** The newest schema version this code knows. */
  static final int LATEST_VERSION = 9;

  private static final List<String> SCRIPTS =
      List.of("V1__work_items.sql", "V2__scheduled.sql", "V3__tether_tables.sql",
          "V4__headers.sql", "V5__long_jobs.sql", "V6__output_tails.sql",
          "V7__workers_and_dashboard.sql", "V8__keyed_items_index.sql",
          "V9__dashboard_indexes_skip_leased_rows.sql");

  private Migrations() {}

  /**
   * Does what {@code mode} says about the schema.
   *
   * @param connection a connection in auto-commit mode; left in auto-commit mode
   * @param engine the engine
   * @param mode migrate, validate or nothing
   * @return the version found before (0 for an empty database; -1 when nothing was looked at)
   * @throws SQLException on a database error
   * @throws SchemaVersionException if the database is newer than this code, or (validating) its
   *     schema is missing or older
   */
  static int prepare(Connection connection, StoreEngine engine, TetherStoreConfig.SchemaMigration mode)
      throws SQLException {
    switch (mode) {
      case NONE:
        return -1;
      case VALIDATE:
        return validate(connection, engine);
      default:
        return migrate(connection, engine, LATEST_VERSION);
    }
  }

  /** Checks that the schema is at {@link #LATEST_VERSION}, changing nothing. */
  static int validate(Connection connection, StoreEngine engine) throws SQLException {
    int current;
    try (Statement st = connection.createStatement();
        ResultSet rs = st.executeQuery("SELECT MAX(version) FROM tether_schema_version")) {
      current = rs.next() ? rs.getInt(1) : 0;
    } catch (SQLException e) {
      if (!engine.isUndefinedTable(e)) {
        throw e;
      }
      current = 0;
    }
    if (current > LATEST_VERSION) {
      throw new SchemaVersionException(current, LATEST_VERSION);
    }
    if (current < LATEST_VERSION) {
      String where = where(connection);
      String found = current == 0
          ? "the Tether tables are missing" + where + " (no schema version recorded)"
          : "the Tether schema" + where + " is at version " + current;
      throw new SchemaVersionException(
          found + " but this code needs version " + LATEST_VERSION + "; the store only validates"
              + " the schema (migration VALIDATE, tether.store.migrate=validate), so nothing was"
              + " changed: apply the migrations once (migration MIGRATE, tether.store.migrate=true),"
              + " or have them applied by whoever may change this database",
          current, LATEST_VERSION);
    }
    return current;
  }

  private static String where(Connection connection) {
    try {
      String schema = connection.getSchema();
      return schema == null || schema.isBlank() ? "" : " in schema '" + schema + "'";
    } catch (SQLException | RuntimeException e) {
      return "";
    }
  }

  /**
   * Brings the schema up to {@link #LATEST_VERSION}.
   *
   * @param connection a connection in auto-commit mode; left in auto-commit mode
   * @param engine the engine
   * @return the version found before migrating (0 for an empty database)
   * @throws SQLException on a database error
   * @throws SchemaVersionException if the database is newer than this code
   */
  static int migrate(Connection connection, StoreEngine engine) throws SQLException {
    return migrate(connection, engine, LATEST_VERSION);
  }

  /**
   * Brings the schema up to {@code target} (tests build older schemas with it).
   */
  static int migrate(Connection connection, StoreEngine engine, int target) throws SQLException {
    try (Statement st = connection.createStatement()) {
      engine.begin(connection);
      try {
        String schema = engine.schemaToCreate();
        if (schema != null) {
          engine.createSchema(connection, schema);
        }
        engine.lockMigrations(connection);
        st.execute(
            "CREATE TABLE IF NOT EXISTS tether_schema_version (version INTEGER PRIMARY KEY,"
                + " description TEXT NOT NULL, applied_at_millis BIGINT NOT NULL)");
        int current = 0;
        try (ResultSet rs = st.executeQuery("SELECT MAX(version) FROM tether_schema_version")) {
          if (rs.next()) {
            current = rs.getInt(1);
          }
        }
        if (current > LATEST_VERSION) {
          throw new SchemaVersionException(current, LATEST_VERSION);
        }
        for (int v = current + 1; v <= target; v++) {
          String script = SCRIPTS.get(v - 1);
          String path = "/dev/tether/jdbc/migrations/" + engine.migrationScripts() + "/" + script;
          for (String sql : statements(path)) {
            st.execute(sql);
          }
          try (PreparedStatement ps = connection.prepareStatement(
              "INSERT INTO tether_schema_version (version, description, applied_at_millis) VALUES (?, ?, ?)")) {
            ps.setInt(1, v);
            ps.setString(2, script);
            ps.setLong(3, System.currentTimeMillis());
            ps.executeUpdate();
          }
          LOG.info("Applied Tether schema migration {} ({})", v, script);
        }
        engine.commit(connection);
        return current;
      } catch (SQLException | RuntimeException e) {
        try {
          engine.rollback(connection);
        } catch (SQLException suppressed) {
          e.addSuppressed(suppressed);
        }
        throw e;
      }
    } finally {
      engine.afterTransaction(connection);
    }
  }

  private static List<String> statements(String resource) {
    try (InputStream in = Migrations.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException(
            "migration script " + resource + " is missing from the classpath; indicates a bug");
      }
      String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      List<String> out = new ArrayList<>();
      for (String part : text.split(";\\s*(\\r?\\n|$)")) {
        if (!part.isBlank()) {
          out.add(part.trim());
        }
      }
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read migration script " + resource, e);
    }
  }
}
