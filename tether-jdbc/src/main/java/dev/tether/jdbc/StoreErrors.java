package dev.tether.jdbc;

import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientConnectionException;
import java.util.function.Predicate;

/**
 * What a failed call's {@link SQLException} says about the store: the signs every JDBC driver
 * gives (the connection exception classes, SQLState class 08), and the engine's own ({@link
 * StoreEngine#isConnectionLoss}, {@link StoreEngine#isDatabaseFault}), looked for along the whole
 * cause chain. Stateless.
 */
final class StoreErrors {
  private StoreErrors() {}

  /**
   * Whether {@code e} says the database cannot be reached or the connection was lost (rather than
   * refusing one statement): a transient fault, retried with backoff.
   */
  static boolean isConnectivity(StoreEngine engine, SQLException e) {
    return isConnectivity(e, engine::isConnectionLoss);
  }

  /**
   * Whether {@code e} says the database is not usable (rather than refusing one statement):
   * connectivity, or the engine's signs of exhausted resources, I/O errors and broken files.
   */
  static boolean isStoreFault(StoreEngine engine, SQLException e) {
    if (isConnectivity(engine, e)) {
      return true;
    }
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException && engine.isDatabaseFault((SQLException) t)) {
        return true;
      }
    }
    return false;
  }

  /** Translates {@code e}: {@link StoreUnavailableException} for connectivity, else the store's root. */
  static TetherStoreException translate(StoreEngine engine, String what, SQLException e) {
    return translate(what, e, isConnectivity(engine, e));
  }

  /**
   * Translates {@code e} before the engine is known (opening the caller's data source): any
   * engine's sign of a lost connection counts.
   */
  static TetherStoreException translateBeforeDetection(String what, SQLException e) {
    return translate(what, e, isConnectivity(e,
        s -> SqliteEngine.connectionLost(s) || PostgresEngine.connectionLost(s)));
  }

  private static boolean isConnectivity(SQLException e, Predicate<SQLException> engineSays) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLTransientConnectionException
          || t instanceof SQLNonTransientConnectionException
          || t instanceof SQLRecoverableException) {
        return true;
      }
      if (t instanceof SQLException) {
        String state = ((SQLException) t).getSQLState();
        if ((state != null && state.startsWith("08")) || engineSays.test((SQLException) t)) {
          return true;
        }
      }
    }
    return false;
  }

  private static TetherStoreException translate(String what, SQLException e, boolean connectivity) {
    if (connectivity) {
      return new StoreUnavailableException(
          "cannot reach the database while " + what + ": " + e.getMessage() + " (SQLState "
              + e.getSQLState() + "); the transaction was rolled back, retry with backoff",
          e);
    }
    return new TetherStoreException(
        "database error while " + what + ": " + e.getMessage() + " (SQLState " + e.getSQLState() + ")",
        e);
  }
}
