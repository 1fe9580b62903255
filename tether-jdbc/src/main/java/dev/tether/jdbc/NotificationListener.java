package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One thread per PostgreSQL store ({@code tether-listener-N}) holding its own connection: it takes
 * a slot of the store's wake-up roster ({@link WakeNotifier}) and {@code LISTEN}s on the slot's
 * channel, on {@link PostgresEngine#CHANNEL} (wake-ups sent to every process) and on {@link
 * PostgresEngine#CANCEL_CHANNEL}. A wake-up wakes the store's waiting receivers (and is passed on
 * when none of its queue waits here); a cancellation tells the holders in this process ({@link
 * CancelWatch}). While receivers wait it is also the process's poller: every poll interval one
 * statement on its connection asks which of their queues hold a due item, and wakes them if one
 * does (not with a test clock, whose instants the database does not know: receivers poll then). A lost connection is logged and reopened with
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

  /**
   * Which of the given queues hold an item an acquisition would take now: the same three index
   * reads as the acquisition ({@link PostgresAcquisitions}), none of them locking.
   */
  private static final String DUE =
      "SELECT q.name FROM unnest(?::text[]) AS q(name), (SELECT date_trunc('milliseconds', clock_timestamp())"
          + " AS now) t WHERE (SELECT e.lease_expires_at FROM tether_work_items e WHERE e.queue = q.name"
          + " AND e.status = 'in_progress' AND e.lease_expires_at <= t.now ORDER BY e.lease_expires_at LIMIT 1)"
          + " IS NOT NULL"
          + " OR COALESCE((SELECT s.available_at FROM tether_work_items s WHERE s.queue = q.name"
          + " AND s.status = 'pending' AND s.scheduled = TRUE ORDER BY s.available_at LIMIT 1) <= t.now, FALSE)"
          + " OR (SELECT w.id FROM tether_work_items w WHERE w.queue = q.name AND w.status = 'pending'"
          + " AND w.scheduled = FALSE AND w.available_at <= t.now ORDER BY w.priority DESC, w.id LIMIT 1)"
          + " IS NOT NULL";

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
    Wakeups wakeups = store.wakeups();
    WakeNotifier notifier = store.notifier();
    while (!stopped) {
      boolean listening = false;
      long ticket = store.availability().begin();
      try (Connection c = store.openListenerConnection()) {
        boolean roster = notifier != null;
        int tag = 0;
        if (roster) {
          String schema = store.currentSchema();
          tag = store.schemaTag();
          c.setAutoCommit(true);
          c.setSchema(schema);
        }
        int slot = -1;
        try (Statement st = c.createStatement()) {
          if (roster) {
            slot = WakeNotifier.takeSlot(c, tag);
          }
          st.execute("LISTEN " + PostgresEngine.CHANNEL);
          st.execute("LISTEN " + PostgresEngine.CANCEL_CHANNEL);
          if (!roster) {
            // no roster: every enqueue notifies CHANNEL, heard by every listening process
          } else if (slot >= 0) {
            st.execute("LISTEN " + WakeNotifier.channel(tag, slot));
          } else {
            LOG.warn("All {} wake-up slots of schema {} are taken; this process hears only its own"
                + " enqueues and finds other items by polling", WakeNotifier.SLOTS, store.currentSchema());
          }
        }
        if (roster) {
          notifier.ownSlot(slot);
        }
        PGConnection pg = c.unwrap(PGConnection.class);
        LOG.debug("Listening for wake-ups on {} (slot {})", description, slot);
        listening = true;
        store.listenerConnected(ticket);
        boolean polls = store.listenerPolls();
        long pollNanos = store.defaultPollInterval().toNanos();
        if (polls) {
          wakeups.sharedPolling(true, pollNanos);
        }
        store.signalItems(); // anything enqueued while not listening
        store.cancelWatch().requestCheck(); // anything cancelled while not listening
        backoff = 100;
        long lastPoll = System.nanoTime();
        while (!stopped) {
          int waitMillis = WAIT_MILLIS;
          if (polls) {
            long untilPoll = lastPoll + pollNanos - System.nanoTime();
            waitMillis = (int) Math.max(1, Math.min(WAIT_MILLIS, untilPoll / 1_000_000L));
          }
          PGNotification[] got = pg.getNotifications(waitMillis);
          if (got != null && got.length > 0) {
            boolean items = false;
            for (PGNotification n : got) {
              if (PostgresEngine.CANCEL_CHANNEL.equals(n.getName())) {
                cancelled(n.getParameter());
              } else {
                items |= woken(n.getParameter(), wakeups, notifier);
              }
            }
            if (items) {
              store.signalItems();
            }
          }
          if (polls && System.nanoTime() - lastPoll >= pollNanos) {
            lastPoll = System.nanoTime();
            poll(c, wakeups);
          }
        }
        // stopped: leave the roster and the channels even if the connection lives on (a caller's pool)
        wakeups.sharedPolling(false, 0);
        if (roster) {
          notifier.ownSlot(-1);
        }
        try (Statement st = c.createStatement()) {
          st.execute("UNLISTEN *");
          if (slot >= 0) {
            try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_unlock(?, ?)")) {
              ps.setInt(1, tag);
              ps.setInt(2, slot);
              ps.execute();
            }
          }
        }
      } catch (SQLException | RuntimeException e) {
        wakeups.sharedPolling(false, 0);
        if (notifier != null) {
          notifier.ownSlot(-1);
        }
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
    wakeups.sharedPolling(false, 0);
    LOG.debug("Stopped listening for enqueue notifications on {}", description);
  }

  /**
   * A wake-up for this process (payload {@code hops:queue}, or none from a broadcast): passed on
   * when no receiver of the queue waits here. Returns true (wake the local receivers).
   */
  private boolean woken(String payload, Wakeups wakeups, WakeNotifier notifier) {
    int colon = payload == null || notifier == null ? -1 : payload.indexOf(':');
    if (colon > 0) {
      try {
        int hops = Integer.parseInt(payload.substring(0, colon));
        String queue = payload.substring(colon + 1);
        if (!wakeups.hasWaiter(queue)) {
          notifier.forward(queue, hops + 1);
        }
      } catch (NumberFormatException e) {
        LOG.debug("Ignoring the payload of a wake-up: {}", payload);
      }
    }
    return true;
  }

  /**
   * The process's poll: one statement on this connection asking which of the queues that have a
   * waiting receiver hold an item the acquisition would take (a due pending item, a due scheduled
   * one, an expired lease); wakes the receivers if any does, else records the empty look so that
   * receives starting now wait instead of looking again.
   */
  private void poll(Connection c, Wakeups wakeups) throws SQLException {
    List<String> queues = wakeups.waitingQueues();
    if (queues.isEmpty()) {
      return;
    }
    long seen = wakeups.generation();
    Set<String> due = new HashSet<>();
    try (PreparedStatement ps = c.prepareStatement(DUE)) {
      ps.setArray(1, c.createArrayOf("text", queues.toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          due.add(rs.getString(1));
        }
      }
    }
    wakeups.sharedPolled();
    for (String q : queues) {
      if (due.contains(q)) {
        wakeups.found(q);
      } else {
        wakeups.nothingFound(q, seen);
      }
    }
    if (!due.isEmpty()) {
      wakeups.sharedPollFound();
      store.signalItems();
    }
  }

  private void cancelled(String payload) {
    try {
      store.cancelWatch().cancelled(Long.parseLong(payload));
    } catch (NumberFormatException e) {
      LOG.warn("Ignoring a cancellation notification on {} with payload '{}': not an item id",
          description, payload);
    }
  }
}
