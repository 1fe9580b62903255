package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * A unit of work run on a connection inside a transaction (or in auto-commit for reads).
 *
 * @param <T> the result type
 */
@FunctionalInterface
interface SqlWork<T> {
  /**
   * Runs the work.
   *
   * @param connection the connection; never committed or closed by the work
   * @return the result
   * @throws SQLException on a database error
   */
  T run(Connection connection) throws SQLException;
}
