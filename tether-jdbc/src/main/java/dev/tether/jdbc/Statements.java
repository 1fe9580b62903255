package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * Where the SQL pieces get a statement for one use: prepared afresh on the connection ({@link
 * #FRESH}), or kept prepared across transactions ({@link StatementCache}, for the group
 * committer's hot statements on the store's own SQLite pool). Close the returned statement after
 * use either way.
 */
@FunctionalInterface
interface Statements {
  /** Prepares every statement afresh and closes it after use. */
  Statements FRESH = (c, sql) -> StatementCache.prepare(null, c, sql);

  /**
   * Returns a statement for {@code sql} on {@code c}.
   *
   * @throws SQLException if the driver cannot prepare it
   */
  StatementCache.Stmt prepare(Connection c, String sql) throws SQLException;
}
