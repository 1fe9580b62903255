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
 * {@code prepareStatement} (measured: about a sixth of the group committer's time in the
 * per-message drain went to compiling and finalizing the same six statements in every group).
 *
 * <p>Statements are prepared on the physical connection (unwrapped from the pool's proxy, so the
 * pool does not close them when the connection is returned); a connection is used by one thread
 * at a time, and so are its statements. A statement handed out is returned with {@link
 * Stmt#close()}, which clears its parameters and batch instead of closing it. Entries of
 * connections the pool closed are dropped when a new connection is first seen, and their
 * statements were finalized by the connection's close; {@link #clear()} closes the rest.
 */
final class StatementCache {
  private static final Logger LOG = LoggerFactory.getLogger(StatementCache.class);

  private final Map<Connection, Map<String, PreparedStatement>> byConnection = new IdentityHashMap<>();

  /** A statement from the cache, or prepared for one use when there is no cache. */
  static final class Stmt implements AutoCloseable {
    private final PreparedStatement ps;
    private final boolean cached;

    private Stmt(PreparedStatement ps, boolean cached) {
      this.ps = ps;
      this.cached = cached;
    }

    PreparedStatement ps() {
      return ps;
    }

    /** Returns a cached statement to the cache (parameters and batch cleared); closes any other. */
    @Override
    public void close() throws SQLException {
      if (cached) {
        ps.clearBatch();
        ps.clearParameters();
      } else {
        ps.close();
      }
    }
  }

  /**
   * Returns a statement for {@code sql} on {@code c}: from {@code cache} (prepared on {@code c}'s
   * physical connection the first time), or a fresh one when {@code cache} is null.
   */
  static Stmt prepare(StatementCache cache, Connection c, String sql) throws SQLException {
    if (cache == null) {
      return new Stmt(c.prepareStatement(sql), false);
    }
    return new Stmt(cache.get(c, sql), true);
  }

  private PreparedStatement get(Connection c, String sql) throws SQLException {
    Connection raw = c.isWrapperFor(Connection.class) ? c.unwrap(Connection.class) : c;
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
          try {
            ps.close();
          } catch (SQLException e) {
            LOG.debug("Could not close a cached statement", e);
          }
        }
      }
      byConnection.clear();
    }
  }
}
