package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Prepared statements kept open across transactions, per physical connection of the store's own
 * SQLite pool, for the group committer's hot statements: SQLite compiles a statement on every
 * {@code prepareStatement}, and compiling and finalizing the same few statements in every group
 * was a large share of the group committer's time (docs/PERFORMANCE.md, "Where the time goes").
 *
 * <p>Statements are prepared on the physical connection (unwrapped from the pool's proxy, so the
 * pool does not close them when the connection is returned); a connection is used by one thread
 * at a time, and so are its statements. A statement handed out is returned with {@link
 * Stmt#close()}, which clears its parameters and batch instead of closing it. Entries of
 * connections the pool closed are dropped when a new connection is first seen, and their
 * statements were finalized by the connection's close; {@link #clear()} closes the rest.
 */
final class StatementCache implements Statements {
  private static final Logger LOG = LoggerFactory.getLogger(StatementCache.class);

  private final Map<Connection, Map<String, PreparedStatement>> byConnection = new IdentityHashMap<>();

  /** A statement from the cache, or prepared for one use when there is no cache. */
  static final class Stmt implements AutoCloseable {
    private final PreparedStatement ps;
    private final StatementCache cache; // null: not cached
    private final Connection raw;
    private final String sql;

    private Stmt(PreparedStatement ps, StatementCache cache, Connection raw, String sql) {
      this.ps = ps;
      this.cache = cache;
      this.raw = raw;
      this.sql = sql;
    }

    PreparedStatement ps() {
      return ps;
    }

    /**
     * Returns a cached statement to the cache (parameters and batch cleared); closes any other. A
     * cached statement that cannot be cleared (the driver finalized it after an error such as
     * {@code SQLITE_FULL}) is dropped from the cache instead, so that the next use prepares it
     * again.
     */
    @Override
    public void close() throws SQLException {
      if (cache == null) {
        ps.close();
        return;
      }
      try {
        ps.clearBatch();
        ps.clearParameters();
      } catch (SQLException e) {
        LOG.debug("Dropping a cached statement that cannot be reused: {}", e.getMessage());
        cache.evict(raw, sql, ps);
      }
    }
  }

  /**
   * Returns a statement for {@code sql} on {@code c}: from {@code cache} (prepared on {@code c}'s
   * physical connection the first time), or a fresh one when {@code cache} is null.
   */
  static Stmt prepare(StatementCache cache, Connection c, String sql) throws SQLException {
    if (cache == null) {
      return new Stmt(c.prepareStatement(sql), null, c, sql);
    }
    Connection raw = raw(c);
    return new Stmt(cache.get(raw, sql), cache, raw, sql);
  }

  @Override
  public Stmt prepare(Connection c, String sql) throws SQLException {
    return prepare(this, c, sql);
  }

  private static Connection raw(Connection c) throws SQLException {
    return c.isWrapperFor(Connection.class) ? c.unwrap(Connection.class) : c;
  }

  /**
   * Closes and forgets every statement cached for {@code c} (call when a transaction on it
   * failed: after some errors the SQLite driver finalizes the statement that met them, and a
   * statement left in an unknown state must not serve the next transaction). Never throws.
   */
  void invalidate(Connection c) {
    Map<String, PreparedStatement> stmts;
    try {
      Connection raw = raw(c);
      synchronized (byConnection) {
        stmts = byConnection.remove(raw);
      }
    } catch (SQLException e) {
      LOG.debug("Could not unwrap a connection to drop its cached statements", e);
      return;
    }
    if (stmts != null) {
      for (PreparedStatement ps : stmts.values()) {
        closeQuietly(ps);
      }
    }
  }

  private void evict(Connection raw, String sql, PreparedStatement ps) {
    Map<String, PreparedStatement> stmts;
    synchronized (byConnection) {
      stmts = byConnection.get(raw);
    }
    // Only the thread holding the connection uses its map.
    if (stmts != null && stmts.get(sql) == ps) {
      stmts.remove(sql);
    }
    closeQuietly(ps);
  }

  private static void closeQuietly(PreparedStatement ps) {
    try {
      ps.close();
    } catch (SQLException e) {
      LOG.debug("Could not close a cached statement", e);
    }
  }

  private PreparedStatement get(Connection raw, String sql) throws SQLException {
    Map<String, PreparedStatement> stmts;
    synchronized (byConnection) {
      stmts = byConnection.get(raw);
      if (stmts == null) {
        dropClosed();
        stmts = new HashMap<>();
        byConnection.put(raw, stmts);
      }
    }
    // Only the thread holding the connection uses its map.
    PreparedStatement ps = stmts.get(sql);
    if (ps == null || ps.isClosed()) {
      ps = raw.prepareStatement(sql);
      stmts.put(sql, ps);
    }
    return ps;
  }

  private void dropClosed() {
    for (Iterator<Map.Entry<Connection, Map<String, PreparedStatement>>> it =
        byConnection.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<Connection, Map<String, PreparedStatement>> e = it.next();
      boolean closed;
      try {
        closed = e.getKey().isClosed();
      } catch (SQLException ex) {
        closed = true;
      }
      if (closed) {
        it.remove();
      }
    }
  }

  /** Number of connections with cached statements (tests). */
  int connections() {
    synchronized (byConnection) {
      return byConnection.size();
    }
  }

  /** Closes every cached statement (the store is closing). */
  void clear() {
    synchronized (byConnection) {
      for (Map<String, PreparedStatement> stmts : byConnection.values()) {
        for (PreparedStatement ps : stmts.values()) {
          closeQuietly(ps);
        }
      }
      byConnection.clear();
    }
  }
}
