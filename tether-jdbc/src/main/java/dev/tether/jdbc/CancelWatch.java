package dev.tether.jdbc;

import dev.tether.mailbox.Message;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells this process's lease holders, within about a second, that an item they hold was
 * cancelled (by any process), whether or not their next extension is due.
 *
 * <p>Holders {@linkplain #watch register} the items they hold. On PostgreSQL with notifications,
 * a cancellation sends a notification with the item id ({@link StoreEngine#notifyCancelled}) that
 * the store's {@link NotificationListener} hands to {@link #cancelled}; a check of all watched
 * items also runs every {@link #BACKSTOP_INTERVAL} and after the listener reconnects, for a
 * notification missed while it was not listening. Elsewhere (SQLite, notifications off) the check
 * runs every {@link #CHECK_INTERVAL}: one statement per {@value LeaseOperations#CANCELLED_CHUNK}
 * watched items, by primary key, and nothing while no item is watched.
 *
 * <p>The check runs on one daemon thread per store ({@code tether-cancel-watch-N}), started on
 * the first watch and ended by {@link #stop()}. A failed check is logged and retried at the next
 * interval. Callbacks run on that thread or the listener's; each runs at most once and must be
 * fast. Thread-safe.
 */
final class CancelWatch {
  private static final Logger LOG = LoggerFactory.getLogger(CancelWatch.class);
  private static final AtomicInteger SEQUENCE = new AtomicInteger();

  /** Between two checks where no notification tells of cancellations. */
  static final Duration CHECK_INTERVAL = Duration.ofMillis(500);

  /** Between two checks where notifications tell of cancellations (a backstop). */
  static final Duration BACKSTOP_INTERVAL = Duration.ofSeconds(5);


  /** One holder's watch of one item. */
  private static final class Watcher implements Message.Subscription {
    final long itemId;
    final Runnable onCancelled;
    final AtomicBoolean done = new AtomicBoolean();
    final CancelWatch owner;

    Watcher(CancelWatch owner, long itemId, Runnable onCancelled) {
      this.owner = owner;
      this.itemId = itemId;
      this.onCancelled = onCancelled;
    }

    void fire() {
      if (done.compareAndSet(false, true)) {
        try {
          onCancelled.run();
        } catch (RuntimeException e) {
          LOG.error("Cancellation callback of item {} failed; ignored", itemId, e);
        }
        owner.remove(this);
      }
    }

    @Override
    public void close() {
      if (done.compareAndSet(false, true)) {
        owner.remove(this);
      }
    }
  }

  private final TetherStore store;
  private final Map<Long, List<Watcher>> watched = new ConcurrentHashMap<>();
  private final Object lock = new Object();
  private Thread thread; // guarded by lock
  private volatile boolean stopped;
  private volatile boolean checkRequested;
  private boolean failing; // only the watch thread reads and writes it

  CancelWatch(TetherStore store) {
    this.store = store;
  }

  /** Watches {@code itemId} until the subscription is closed or the item is found cancelled. */
  Message.Subscription watch(long itemId, Runnable onCancelled) {
    Watcher w = new Watcher(this, itemId, onCancelled);
    watched.computeIfAbsent(itemId, k -> new CopyOnWriteArrayList<>()).add(w);
    store.ensureListener();
    synchronized (lock) {
      if (thread == null && !stopped) {
        thread = new Thread(this::run, "tether-cancel-watch-" + SEQUENCE.incrementAndGet());
        thread.setDaemon(true);
        thread.start();
      }
      lock.notifyAll();
    }
    return w;
  }

  /** The store says {@code itemId} was cancelled: tells its watchers in this process. */
  void cancelled(long itemId) {
    List<Watcher> ws = watched.get(itemId);
    if (ws != null) {
      for (Watcher w : ws) {
        w.fire();
      }
    }
  }

  /**
   * A cancellation notification named {@code itemId}: if it is watched here, checks the store
   * soon rather than telling its watchers at once. The channel is the database's, not the
   * schema's, and its payload is an id only: a store of another schema in the same database
   * notifies the same channel for its own item of that id, which must not stop this one.
   */
  void notified(long itemId) {
    if (watched.containsKey(itemId)) {
      requestCheck();
    }
  }

  /** Asks for a check of every watched item soon (a listener reconnected). */
  void requestCheck() {
    checkRequested = true;
    synchronized (lock) {
      lock.notifyAll();
    }
  }

  /** Ends the thread (within one interval); idempotent. */
  void stop() {
    stopped = true;
    synchronized (lock) {
      lock.notifyAll();
    }
  }

  /** How many items are watched, for tests. */
  int watchedCount() {
    return watched.size();
  }

  private void remove(Watcher w) {
    watched.computeIfPresent(w.itemId, (k, ws) -> {
      ws.remove(w);
      return ws.isEmpty() ? null : ws;
    });
  }

  private void run() {
    long interval = (store.usesNotifications() ? BACKSTOP_INTERVAL : CHECK_INTERVAL).toMillis();
    while (!stopped && !store.isClosed()) {
      try {
        synchronized (lock) {
          long end = System.currentTimeMillis() + interval;
          while (!stopped && !checkRequested) {
            long left = end - System.currentTimeMillis();
            if (left <= 0) {
              break;
            }
            // no timed wake-ups while nothing is watched: a watch notifies the lock
            lock.wait(watched.isEmpty() ? 0 : left);
            if (watched.isEmpty()) {
              end = System.currentTimeMillis() + interval;
            }
          }
        }
        checkRequested = false;
        if (!stopped && !watched.isEmpty()) {
          checkNow();
          if (failing) {
            failing = false;
            LOG.info("Checking held items for cancellation works again");
          }
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (RuntimeException e) {
        if (!stopped && !store.isClosed()) {
          // once per outage at WARN: the store's own calls report the outage too
          if (!failing) {
            failing = true;
            LOG.warn("Checking {} held items for cancellation failed; retrying every {} ms"
                + " (holders learn of a cancellation at their next store call meanwhile): {}",
                watched.size(), interval, e.toString());
          } else {
            LOG.debug("Checking held items for cancellation failed again: {}", e.toString());
          }
        }
      }
    }
  }

  /** Checks every watched item once; tells the watchers of those found cancelled. */
  void checkNow() {
    List<Long> ids = new ArrayList<>(watched.keySet());
    if (ids.isEmpty()) {
      return;
    }
    List<Long> found = store.read("checking " + ids.size() + " items for cancellation",
        c -> store.sql().leases().cancelledAmong(c, ids));
    for (long id : found) {
      cancelled(id);
    }
  }
}
