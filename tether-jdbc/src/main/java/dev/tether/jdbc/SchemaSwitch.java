package dev.tether.jdbc;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Puts a connection of a caller's data source on the store's schema while the store uses it, and
 * gives it back as it was: the application's own statements on that pool keep their {@code
 * search_path}. Used only when a store on a caller's data source was given a schema.
 */
final class SchemaSwitch {
  private static final Logger LOG = LoggerFactory.getLogger(SchemaSwitch.class);

  private SchemaSwitch() {}

  /**
   * Switches {@code c} to the engine's schema and returns a view of it whose {@code close()}
   * switches it back first.
   */
  static Connection borrowed(Connection c, StoreEngine engine, String schema) throws SQLException {
    String previous = engine.enterSchema(c, schema);
    InvocationHandler h = new InvocationHandler() {
      private boolean closed;

      @Override
      public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
        if (method.getName().equals("close") && method.getParameterCount() == 0) {
          if (!closed) {
            closed = true;
            try {
              if (!c.isClosed()) {
                engine.leaveSchema(c, previous);
              }
            } catch (SQLException e) {
              // A connection that broke is dropped by its pool; an aborted transaction has
              // already undone the switch when it rolls back.
              LOG.debug("Could not restore the search_path of a borrowed connection", e);
            } finally {
              c.close();
            }
          }
          return null;
        }
        try {
          return method.invoke(c, args);
        } catch (InvocationTargetException e) {
          throw e.getCause();
        }
      }
    };
    return (Connection) Proxy.newProxyInstance(
        SchemaSwitch.class.getClassLoader(), new Class<?>[] {Connection.class}, h);
  }

  /**
   * Runs {@code work} on the caller's connection switched to the schema, inside the caller's
   * transaction, and switches back after (a rollback undoes the switch by itself).
   */
  static <T> T within(Connection c, StoreEngine engine, String schema, SqlWork<T> work) throws SQLException {
    String previous = engine.enterSchema(c, schema);
    T result;
    try {
      result = work.run(c);
    } catch (Throwable t) {
      // The caller's transaction may go on (a refusal such as a full mailbox leaves it healthy):
      // it gets its search_path back. After a database error it is aborted, and its rollback
      // undoes the switch by itself.
      try {
        engine.leaveSchema(c, previous);
      } catch (SQLException e) {
        t.addSuppressed(e);
      }
      throw t;
    }
    engine.leaveSchema(c, previous);
    return result;
  }
}
