package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One thread per PostgreSQL store ({@code tether-listener-N}) holding its own connection that
 * {@code LISTEN}s on its schema's broadcast channel ({@link WakeRoster#broadcastChannel}), {@link
 * PostgresEngine#CANCEL_CHANNEL} and,
 * for each queue the store's receivers wait for, the channel of the store's slot in that queue's
 * {@link WakeRoster}: claimed as soon as a receiver is about to wait for a queue the store holds
 * no slot of ({@link #ask}: the store notifies this listener's own channel, {@link #wakeChannel},
 * since only a notification ends its wait for notifications early; until the slot is there other
 * processes' enqueues of the queue wake nobody here), checked against the queues waited for every
 * {@value #WAIT_MILLIS} ms, and given up once no receiver waited for (or asked for) the queue in
 * {@value #KEEP_SECONDS} s.
 * A wake-up on a slot wakes a waiting receiver of its queue or, when none waits, is passed on to
 * one more slot of the queue (at most {@link WakeRoster#MAX_HOPS} times), from this connection;
 * one on the broadcast channel wakes a waiting receiver of each queue; one of a
 * cancellation has {@link CancelWatch} check the store for a watched item of that id (the
 * cancellation channel is the database's: another schema's notification names its own item). A lost connection is logged and reopened with
 * backoff; meanwhile receivers still poll, and after reconnecting they are woken once in case a
 * notification was missed. Losing an established connection marks the store {@linkplain
 * TetherStore#isAvailable() unavailable}; reconnecting marks it available again (unless a call
 * failed meanwhile). Daemon thread; {@link #stop()} ends it within a second, its slots given up
 * and its {@code LISTEN}s ended before its connection is closed.
 */
final class NotificationListener implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(NotificationListener.class);
  private static final AtomicInteger SEQUENCE = new AtomicInteger();
  /** The longest single wait for notifications, and how often the slots are checked unasked. */
  private static final int WAIT_MILLIS = 500;
  private static final long MAX_BACKOFF_MILLIS = 5_000;
  private static final long KEEP_SECONDS = 60;

  /** The slot channels this connection listens on, by queue; only the listener thread uses it. */
  private final Map<String, String> slotChannels = new HashMap<>();
  /** The same, by channel. */
  private final Map<String, String> slotQueues = new HashMap<>();
  private boolean rosterFull;
  /** When a claim of each queue last found every slot taken (System.nanoTime()); listener thread only. */
  private final Map<String, Long> claimFailed = new HashMap<>();
  /** Queues receivers asked for a slot of, not yet taken in by the listener thread. */
  private final Set<String> asks = ConcurrentHashMap.newKeySet();
  /**
   * Whether the current connection has {@code LISTEN}ed on {@link #wakeChannel}, so that an ask's
   * notification is heard; true until the listener notices the connection is lost.
   */
  private volatile boolean hearsAsks;
  /** The channel only this listener hears: a receiver of its store asking for a slot. */
  private final String wakeChannel =
      "tether_l" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
  private volatile long syncNanos = WAIT_MILLIS * 1_000_000L;

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

  /**
   * Asks for a slot of {@code queue} ({@link TetherStore#beforeWait}). Returns whether the
   * listener listens on {@link #wakeChannel}: if so, the caller notifies that channel and the
   * listener takes the slot at once; if not, the listener takes it when it listens. (The queue is
   * recorded before the flag is read, and the listener sets the flag before it reads the
   * recorded queues, so one of the two sees the other.)
   */
  boolean ask(String queue) {
    asks.add(queue);
    return hearsAsks;
  }

  /** The channel only this listener hears, on which its store asks for slots ({@link #ask}). */
  String wakeChannel() {
    return wakeChannel;
  }

  /** How often the slots are checked without being asked (tests set it long). */
  void periodicSync(Duration every) {
    syncNanos = every.toNanos();
  }

  @Override
  public void run() {
    try {
      listen();
    } finally {
      hearsAsks = false; // also when an Error ends the thread: asks are not notified to nobody
    }
  }

  private void listen() {
    long backoff = 100;
    while (!stopped) {
      boolean listening = false;
      long ticket = store.availability().begin();
      try (Connection c = store.openListenerConnection()) {
        c.setAutoCommit(true); // the slot claims and passed-on wake-ups commit at once
        slotChannels.clear();
        slotQueues.clear();
        try (Statement st = c.createStatement()) {
          WakeRoster roster = store.roster();
          st.execute("LISTEN " + (roster != null ? roster.broadcastChannel() : PostgresEngine.CHANNEL));
          st.execute("LISTEN " + PostgresEngine.CANCEL_CHANNEL);
          st.execute("LISTEN " + wakeChannel);
        }
        PGConnection pg = c.unwrap(PGConnection.class);
        LOG.debug("Listening for enqueue notifications on {}", description);
        listening = true;
        store.listenerConnected(ticket);
        hearsAsks = true; // before the first takeAsks: an ask either is taken in or notifies
        store.signalItems(); // anything enqueued while not listening
        store.cancelWatch().requestCheck(); // anything cancelled while not listening
        backoff = 100;
        Map<String, Long> asked = new HashMap<>(); // queues asked for a slot of, and when
        long synced = System.nanoTime() - syncNanos; // the first pass checks at once
        while (!stopped) {
          long now = System.nanoTime();
          if (takeAsks(asked, now) || now - synced >= syncNanos) {
            asked.values().removeIf(at -> now - at >= KEEP_SECONDS * 1_000_000_000L);
            syncSlots(c, asked.keySet());
            synced = now;
          }
          long untilSync = (synced + syncNanos - System.nanoTime()) / 1_000_000L;
          PGNotification[] got = pg.getNotifications((int) Math.max(1, Math.min(WAIT_MILLIS, untilSync)));
          if (got != null && got.length > 0) {
            boolean items = false;
            for (PGNotification n : got) {
              String queue = slotQueues.get(n.getName());
              if (wakeChannel.equals(n.getName())) {
                continue; // an ask: taken in at the top of the loop
              } else if (queue != null) {
                items |= wakeOrPassOn(c, queue, n.getParameter());
              } else if (PostgresEngine.CANCEL_CHANNEL.equals(n.getName())) {
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
        hearsAsks = false;
        giveUp(c);
      } catch (SQLException | RuntimeException e) {
        hearsAsks = false;
        WakeRoster roster = store.roster();
        if (roster != null) {
          roster.releasedAll();
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
    LOG.debug("Stopped listening for enqueue notifications on {}", description);
  }

  /**
   * Stopping: gives up this connection's slots and stops listening before the connection is
   * closed, since on a caller's data source closing only returns it to their pool, where the
   * session's advisory locks and {@code LISTEN}s would outlive the store (its slots staying in
   * the roster, so enqueues would notify a slot nobody reads). Best effort: a failure is logged.
   */
  private void giveUp(Connection c) {
    WakeRoster roster = store.roster();
    try {
      if (roster != null) {
        for (String queue : slotChannels.keySet()) {
          roster.release(c, queue);
        }
      }
      try (Statement st = c.createStatement()) {
        st.execute("UNLISTEN *");
      }
    } catch (SQLException | RuntimeException e) {
      LOG.debug("Could not give up the wake-up slots of {} before closing ({})", description, e.toString());
    } finally {
      slotChannels.clear();
      slotQueues.clear();
    }
  }

  /** Moves the queues asked for since the last call into {@code asked}; true if there were any. */
  private boolean takeAsks(Map<String, Long> asked, long now) {
    boolean any = false;
    for (Iterator<String> it = asks.iterator(); it.hasNext(); ) {
      asked.put(it.next(), now);
      it.remove();
      any = true;
    }
    return any;
  }

  /**
   * Takes a slot in the roster of each queue the store's receivers wait for or asked for a slot of
   * ({@code asked}), and gives up the slots of queues no receiver waited for in {@value
   * #KEEP_SECONDS} s.
   */
  private void syncSlots(Connection c, Set<String> asked) throws SQLException {
    WakeRoster roster = store.roster();
    if (roster == null) {
      return;
    }
    Set<String> wanted = store.wakeups().waitedOn(KEEP_SECONDS * 1_000_000_000L);
    wanted.addAll(asked);
    claimFailed.keySet().retainAll(wanted);
    for (Iterator<Map.Entry<String, String>> it = slotChannels.entrySet().iterator();
        it.hasNext(); ) {
      Map.Entry<String, String> e = it.next();
      if (!wanted.contains(e.getKey())) {
        try (Statement st = c.createStatement()) {
          st.execute("UNLISTEN " + e.getValue());
        }
        roster.release(c, e.getKey());
        slotQueues.remove(e.getValue());
        it.remove();
      }
    }
    boolean claimed = false;
    for (String queue : wanted) {
      if (slotChannels.containsKey(queue)) {
        continue;
      }
      Long failed = claimFailed.get(queue);
      if (failed != null && System.nanoTime() - failed < WAIT_MILLIS * 1_000_000L / 2) {
        continue; // every slot was taken a moment ago: an ask's check does not try again
      }
      int slot = roster.claim(c, queue);
      if (slot < 0) {
        claimFailed.put(queue, System.nanoTime());
        if (!rosterFull) {
          rosterFull = true;
          LOG.warn("All {} wake-up slots of queue '{}' on {} are taken: this store's receivers find"
              + " its items by polling", WakeRoster.SLOTS, queue, description);
        }
        continue;
      }
      claimFailed.remove(queue);
      String channel = roster.channel(queue, slot);
      try (Statement st = c.createStatement()) {
        st.execute("LISTEN " + channel);
      }
      slotChannels.put(queue, channel);
      slotQueues.put(channel, queue);
      claimed = true;
      LOG.debug("Listening for wake-ups of queue '{}' on {} (slot {})", queue, description, slot);
    }
    if (claimed) {
      store.signalItems(); // what was enqueued before the slot was there woke nobody here
    }
  }

  /**
   * A wake-up on this store's slot of {@code queue}: when no receiver that takes any item waits
   * for the queue the payload names (one filtered for a work type or task may not take it) (another queue whose key collides with {@code queue}'s shares its ring of
   * slots, {@link WakeRoster#keyOf}), passes it on to the next slot unless it was passed on
   * enough. Returns true: the caller signals this store's receivers either way, so that one that
   * waits wakes, and one that comes back from its work looks instead of skipping its look ({@link
   * Wakeups#start}).
   */
  private boolean wakeOrPassOn(Connection c, String queue, String payload) throws SQLException {
    String named = WakeRoster.queue(payload);
    if (store.wakeups().hasUnfilteredWaiting(named != null ? named : queue)) {
      return true;
    }
    int hops = WakeRoster.hops(payload);
    WakeRoster roster = store.roster();
    if (hops < WakeRoster.MAX_HOPS && roster != null) {
      store.engineForListener().notifyItems(c, roster.passOn(c, queue), WakeRoster.payload(hops + 1, queue));
    }
    return true;
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
