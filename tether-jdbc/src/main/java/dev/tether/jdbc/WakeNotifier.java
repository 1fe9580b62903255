package dev.tether.jdbc;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells other processes of a PostgreSQL store that items may be available, without the herd and
 * without holding up enqueues (see {@code docs/WAKEUPS.md}).
 *
 * <ul>
 *   <li><b>Roster.</b> Each listening store holds a session advisory lock {@code (tag, slot)} on
 *       its listener connection (the lowest free slot of {@value #SLOTS}; {@code tag} is derived
 *       from the schema) and listens on a channel of its own, {@link #channel(int, int)}. The
 *       roster is the set of granted locks of the tag ({@code pg_locks}); a process that dies
 *       leaves it when its connection ends.
 *   <li><b>Few targets.</b> A wake-up goes to {@link #fanout()} slots of the roster (not this
 *       process's own: its receivers are woken locally), rotating, with the queue as payload. A
 *       woken process with no receiver of that queue waiting passes it on to the next slot, at
 *       most {@value #MAX_HOPS} times.
 *   <li><b>Off the enqueue's commit.</b> A single enqueue commits without {@code NOTIFY}; it
 *       hands its queue to this notifier's thread ({@code tether-notifier-N}), which sends the
 *       wake-ups of every enqueue committed meanwhile in one auto-committed statement. Enqueues do
 *       not queue for PostgreSQL's commit-time notification lock; at most one statement of this
 *       process does.
 * </ul>
 *
 * A wake-up that is lost (a process died, a statement failed) costs latency, not the item: the
 * listening processes look for due items every poll interval ({@link NotificationListener}).
 *
 * <p>Thread-safe. The thread is a daemon, started on first use, ended by {@link #stop()}.
 */
final class WakeNotifier implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(WakeNotifier.class);
  private static final AtomicInteger SEQUENCE = new AtomicInteger();

  /** Roster slots per schema. */
  static final int SLOTS = 1024;
  /** Processes one wake-up goes to. */
  static final int FANOUT = 2;
  /** How often a woken process without a waiting receiver of the queue passes it on. */
  static final int MAX_HOPS = 3;
  /** A roster older than this is read again before use. */
  private static final long ROSTER_TTL_NANOS = 1_000_000_000L;
  /** Within a transaction, a roster older than this is not used: the wake-up goes to everyone. */
  private static final long ROSTER_STALE_NANOS = 5_000_000_000L;

  private static final String ROSTER =
      "SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted"
          + " AND classid = ?::bigint::oid"
          + " AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY 1";

  private static final String SEND =
      "SELECT count(pg_notify(t.c, t.p)) FROM unnest(?::text[], ?::text[]) AS t(c, p)";

  private final TetherStore store;
  private final Object lock = new Object();
  /** Queues to wake fresh targets for. Guarded by lock. */
  private final Set<String> fresh = new LinkedHashSet<>();
  /** Queues to pass on, with the hop count to send. Guarded by lock. */
  private final Map<String, Integer> forwards = new LinkedHashMap<>();
  private boolean refreshWanted; // guarded by lock
  private Thread thread; // guarded by lock
  private volatile boolean stopped;

  private volatile int ownSlot = -1;
  private volatile int[] roster = new int[0];
  private volatile long rosterAt;
  private volatile boolean rosterRead;
  private final AtomicInteger cursor = new AtomicInteger();
  private volatile int fanout = FANOUT;
  private final AtomicLong notificationsSent = new AtomicLong();
  private final AtomicLong statements = new AtomicLong();

  WakeNotifier(TetherStore store) {
    this.store = store;
  }

  /** The roster lock's first key for {@code schema}: non-negative, stable across processes. */
  static int tag(String schema) {
    byte[] b = schema.getBytes(StandardCharsets.UTF_8);
    int h = 0x811c9dc5; // FNV-1a
    for (byte x : b) {
      h = (h ^ (x & 0xff)) * 0x01000193;
    }
    return h & 0x7fffffff;
  }

  /** The channel of roster slot {@code slot} of {@code tag}. */
  static String channel(int tag, int slot) {
    return "tether_w_" + Integer.toHexString(tag) + "_" + slot;
  }

  /** The payload of a wake-up: the hop count and the queue (empty: any queue). */
  static String payload(int hops, String queue) {
    return hops + ":" + (queue == null ? "" : queue);
  }

  /** Takes the lowest free roster slot on {@code c} (held while it is open); -1 if none is free. */
  static int takeSlot(Connection c, int tag) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "SELECT s FROM generate_series(0, ?) AS s WHERE pg_try_advisory_lock(?, s) LIMIT 1")) {
      ps.setInt(1, SLOTS - 1);
      ps.setInt(2, tag);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getInt(1) : -1;
      }
    }
  }

  /** This process's listener holds {@code slot} (-1: none). */
  void ownSlot(int slot) {
    this.ownSlot = slot;
  }

  int ownSlot() {
    return ownSlot;
  }

  /** Sets how many processes a wake-up goes to (tests). */
  void fanout(int n) {
    this.fanout = n;
  }

  int fanout() {
    return fanout;
  }

  /** Notifications sent so far (each to one process). */
  long notificationsSent() {
    return notificationsSent.get();
  }

  /** Statements sent so far (sends and roster reads). */
  long statements() {
    return statements.get();
  }

  /** Items of {@code queue} were committed: wake a few other processes soon. Never blocks. */
  void wake(String queue) {
    if (nobodyElseListens()) {
      return; // no thread wake-up per enqueue while a recent roster has nobody to wake
    }
    synchronized (lock) {
      if (stopped) {
        return;
      }
      fresh.add(queue);
      startLocked();
      lock.notifyAll();
    }
  }

  /** A wake-up of {@code queue} found no waiting receiver here: pass it on (hop {@code hops}). */
  void forward(String queue, int hops) {
    if (hops > MAX_HOPS) {
      return;
    }
    synchronized (lock) {
      if (stopped) {
        return;
      }
      forwards.merge(queue, hops, Math::min);
      startLocked();
      lock.notifyAll();
    }
  }

  /**
   * Inside a transaction that makes items available: notifies a few roster slots and this
   * process's own at its commit, or every listener ({@link PostgresEngine#CHANNEL}) when no recent roster is known.
   */
  void notifyInTransaction(Connection c, String queue) throws SQLException {
    int[] r = roster;
    List<String> channels = new ArrayList<>();
    if (rosterRead && System.nanoTime() - rosterAt < ROSTER_STALE_NANOS) {
      List<Integer> targets = targets(r, fanout, cursor.getAndIncrement());
      int t = store.schemaTag();
      for (int s : targets) {
        channels.add(channel(t, s));
      }
      if (ownSlot >= 0) {
        channels.add(channel(t, ownSlot)); // this process's receivers too, once it commits
      }
    } else {
      channels.add(PostgresEngine.CHANNEL);
      synchronized (lock) {
        refreshWanted = true;
        startLocked();
        lock.notifyAll();
      }
    }
    if (channels.isEmpty()) {
      return; // nobody listens
    }
    List<String> payloads = new ArrayList<>();
    for (int i = 0; i < channels.size(); i++) {
      payloads.add(payload(0, queue));
    }
    send(c, channels, payloads);
  }

  /** Ends the thread; idempotent, never blocks. */
  void stop() {
    synchronized (lock) {
      stopped = true;
      lock.notifyAll();
    }
  }

  private void startLocked() {
    if (thread == null && !stopped) {
      thread = new Thread(this, "tether-notifier-" + SEQUENCE.incrementAndGet());
      thread.setDaemon(true);
      thread.start();
    }
  }

  @Override
  public void run() {
    while (true) {
      List<String> wakeQueues;
      Map<String, Integer> passOn;
      boolean refresh;
      synchronized (lock) {
        while (!stopped && fresh.isEmpty() && forwards.isEmpty() && !refreshWanted) {
          try {
            lock.wait();
          } catch (InterruptedException e) {
            return;
          }
        }
        if (stopped) {
          return;
        }
        wakeQueues = new ArrayList<>(fresh);
        passOn = new LinkedHashMap<>(forwards);
        refresh = refreshWanted;
        fresh.clear();
        forwards.clear();
        refreshWanted = false;
      }
      try {
        sendBatch(wakeQueues, passOn, refresh);
      } catch (SQLException | RuntimeException e) {
        if (stopped) {
          return;
        }
        LOG.debug("Could not send wake-ups for queues {} {}; listeners find the items at their next poll",
            wakeQueues, passOn.keySet(), e);
        try {
          Thread.sleep(100); // a failing database: do not spin
        } catch (InterruptedException ie) {
          return;
        }
      }
    }
  }

  private void sendBatch(List<String> wakeQueues, Map<String, Integer> passOn, boolean refresh)
      throws SQLException {
    if (!refresh && nobodyElseListens()) {
      return; // a recent roster has nobody else to wake: no connection, no statement
    }
    int t = store.schemaTag(); // before borrowing: it may read the schema on a connection of its own
    try (Connection c = store.borrow()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      if (refresh || !rosterRead || System.nanoTime() - rosterAt >= ROSTER_TTL_NANOS) {
        readRoster(c, t);
      }
      int[] r = roster;
      List<String> channels = new ArrayList<>();
      List<String> payloads = new ArrayList<>();
      for (String q : wakeQueues) {
        for (int s : targets(r, fanout, cursor.getAndIncrement())) {
          channels.add(channel(t, s));
          payloads.add(payload(0, q));
        }
      }
      for (Map.Entry<String, Integer> f : passOn.entrySet()) {
        int next = nextAfterOwn(r);
        if (next >= 0 && f.getValue() < r.length) {
          channels.add(channel(t, next));
          payloads.add(payload(f.getValue(), f.getKey()));
        }
      }
      if (!channels.isEmpty()) {
        send(c, channels, payloads);
      }
    }
  }

  private void readRoster(Connection c, int tag) throws SQLException {
    List<Integer> slots = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(ROSTER)) {
      ps.setLong(1, tag);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          slots.add((int) rs.getLong(1));
        }
      }
    }
    statements.incrementAndGet();
    int[] r = new int[slots.size()];
    for (int i = 0; i < r.length; i++) {
      r[i] = slots.get(i);
    }
    roster = r;
    rosterAt = System.nanoTime();
    rosterRead = true;
  }

  private void send(Connection c, List<String> channels, List<String> payloads) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(SEND)) {
      ps.setArray(1, c.createArrayOf("text", channels.toArray()));
      ps.setArray(2, c.createArrayOf("text", payloads.toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
      }
    }
    statements.incrementAndGet();
    notificationsSent.addAndGet(channels.size());
  }

  /** Whether the roster was read less than its time to live ago and holds no other slot. */
  private boolean nobodyElseListens() {
    if (!rosterRead || System.nanoTime() - rosterAt >= ROSTER_TTL_NANOS) {
      return false;
    }
    int[] r = roster;
    return r.length == 0 || (r.length == 1 && r[0] == ownSlot);
  }

  /** Up to {@code n} slots of {@code r} other than this process's, from position {@code from}. */
  private List<Integer> targets(int[] r, int n, int from) {
    int own = ownSlot;
    List<Integer> others = new ArrayList<>(r.length);
    for (int s : r) {
      if (s != own) {
        others.add(s);
      }
    }
    if (others.isEmpty()) {
      return List.of();
    }
    List<Integer> out = new ArrayList<>(n);
    int start = Math.floorMod(from, others.size());
    for (int i = 0; i < Math.min(n, others.size()); i++) {
      out.add(others.get((start + i) % others.size()));
    }
    return out;
  }

  /** The first slot of {@code r} after this process's own, cyclically; -1 if there is none. */
  private int nextAfterOwn(int[] r) {
    int own = ownSlot;
    int first = -1;
    for (int s : r) {
      if (s == own) {
        continue;
      }
      if (first < 0) {
        first = s;
      }
      if (s > own) {
        return s;
      }
    }
    return first;
  }

}
