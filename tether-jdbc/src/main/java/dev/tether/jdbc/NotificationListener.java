package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One thread per PostgreSQL store ({@code tether-listener-N}) holding its own connection that
 * {@code LISTEN}s on {@link PostgresEngine#CHANNEL} and {@link PostgresEngine#CANCEL_CHANNEL}; each
 * notification of an enqueue committed by any process wakes the store's waiting receivers, each
 * of a cancellation has {@link CancelWatch} check the store for a watched item of that id (the
 * channels are the database's: another schema's notification names its own item). A lost connection is logged and reopened with
 * backoff; meanwhile receivers still poll, and after reconnecting they are woken once in case a
 * notification was missed. Losing an established connection marks the store {@linkplain
 * TetherStore#isAvailable() unavailable}; reconnecting marks it available again (unless a call
 * failed meanwhile). Daemon thread; {@link #stop()} ends it within a second.
 */
final class NotificationListener implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(NotificationListener.class);
  private static final AtomicInteger SEQUENCE = new AtomicInteger();
  private static final int WAIT_MILLIS = 500;
  private static final long MAX_BACKOFF_MILLIS = 5_000;

  private final TetherStore store;
  private final String description;
  private final Thread thread;
  private volatile boolean stopped;

  NotificationListener(TetherStore store, String description) {
    this.store = store;
    this.description = description;
    this.thread = new Thread(this, "tether-listener-" + SEQUENCE.incrementAndGet());
    this.thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  /** Asks the thread to end (it notices within {@value #WAIT_MILLIS} ms); idempotent, never blocks. */
  void stop() {
    stopped = true;
  }

  @Override
  public void run() {
    long backoff = 100;
    while (!stopped) {
      boolean listening = false;
      long ticket = store.availability().begin();
      try (Connection c = store.openListenerConnection()) {
        try (Statement st = c.createStatement()) {
          st.execute("LISTEN " + PostgresEngine.CHANNEL);
          st.execute("LISTEN " + PostgresEngine.CANCEL_CHANNEL);
        }
        PGConnection pg = c.unwrap(PGConnection.class);
        LOG.debug("Listening for enqueue notifications on {}", description);
        listening = true;
        store.listenerConnected(ticket);
        store.signalItems(); // anything enqueued while not listening
        store.cancelWatch().requestCheck(); // anything cancelled while not listening
        backoff = 100;
        while (!stopped) {
          PGNotification[] got = pg.getNotifications(WAIT_MILLIS);
          if (got != null && got.length > 0) {
            boolean items = false;
            for (PGNotification n : got) {
              if (PostgresEngine.CANCEL_CHANNEL.equals(n.getName())) {
                cancelled(n.getParameter());
              } else {
                items = true;
              }
            }
            if (items) {
              store.signalItems();
            }
          }
        }
      } catch (SQLException | RuntimeException e) {
        if (stopped) {
          break;
        }
        if (listening) {
          // a lost connection says the database went away (or this backend was ended): the
          // store is unavailable until a later call or reconnect works. A failed reconnect is
          // not counted again: the pool's calls decide meanwhile.
          store.listenerLost(e);
        }
        LOG.warn("Enqueue notifications from {} interrupted ({}); receivers fall back to polling,"
            + " reconnecting in {} ms", description, e.toString(), backoff);
        try {
          Thread.sleep(backoff);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          return;
        }
        backoff = Math.min(MAX_BACKOFF_MILLIS, backoff * 2);
      }
    }
    LOG.debug("Stopped listening for enqueue notifications on {}", description);
  }

  private void cancelled(String payload) {
    try {
      store.cancelWatch().notified(Long.parseLong(payload));
    } catch (NumberFormatException e) {
      LOG.warn("Ignoring a cancellation notification on {} with payload '{}': not an item id",
          description, payload);
    }
  }
}
