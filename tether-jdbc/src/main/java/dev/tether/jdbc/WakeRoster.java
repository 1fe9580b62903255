package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Who to wake on PostgreSQL when items become available, so that one enqueue wakes a small
 * constant number of processes waiting for its queue, not every process listening (a {@code
 * NOTIFY} on a channel every process listens on wakes them all: the herd River and Oban users
 * hit).
 *
 * <p>For each queue its receivers wait on, a store holds one <em>slot</em>: a session advisory
 * lock {@code (key, slot)} on its listener's connection, {@code key} derived from the store's
 * schema and the queue ({@link #keyOf}), {@code slot} the first free one of {@value #SLOTS}, and
 * it listens on that slot's channel ({@link #channel}). The lock is the slot's liveness:
 * PostgreSQL releases it when the session ends, a crashed process included, so the roster of a
 * queue is the granted advisory locks of its key in {@code pg_locks}, which a notifying store
 * reads at most once per {@link #REFRESH_NANOS} per queue (an empty roster at most every {@link
 * #EMPTY_REFRESH_NANOS}) and caches; a store that takes a new slot has its receivers look once,
 * for what was enqueued before anyone could notify it. An enqueue notifies
 * {@link #TARGETS} slots of its queue (more for a batch) chosen in rotation, never its own
 * store's; a store woken with no receiver waiting for the queue passes the wake-up on to the next
 * slot of the ring, at most {@link #MAX_HOPS} times. Keys are per schema and queue, so that stores of other
 * schemas in the same database, and receivers of other queues, never hear them. Thread-safe.
 */
final class WakeRoster {
  /** Slots per queue: the most listening stores (processes) of one queue that take part. */
  static final int SLOTS = 1024;
  /** Slots an enqueue of one item wakes. */
  static final int TARGETS = 2;
  /** Items of a batch enqueue per additional slot woken. */
  static final int ITEMS_PER_TARGET = 8;
  /** How many times a wake-up is passed on by stores with no receiver waiting. */
  static final int MAX_HOPS = 3;
  /** How long a read of a queue's roster is used before it is read again. */
  static final long REFRESH_NANOS = 1_000_000_000L;
  /** How long a read that found no slot is used: a store that just began to wait is heard soon. */
  static final long EMPTY_REFRESH_NANOS = 100_000_000L;
  /** Queues whose rosters are cached at most (the cache is dropped beyond). */
  private static final int CACHED = 1024;

  /**
   * The first free slot of a key, skipping those of the array (slots this session already holds
   * for another queue of the same key: an advisory lock is re-entrant within a session, so trying
   * one would "take" it again; the CASE keeps the lock from being tried for them). Its upper
   * bound is {@link #SLOTS} - 1. Parameters: the held slots, the key.
   */
  private static final String CLAIM =
      "SELECT s FROM generate_series(0, 1023) s"
          + " WHERE CASE WHEN s = ANY(?::int[]) THEN FALSE ELSE pg_try_advisory_lock(?, s) END LIMIT 1";
  private static final String ROSTER =
      "SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted"
          + " AND classid = (?::bigint)::oid"
          + " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
          + " ORDER BY objid";

  /** One read of a queue's roster. */
  private record Read(int[] slots, long at) {}

  private final String schema;
  /**
   * Where the rotation of targets starts: at random, so that short-lived producers (one {@code
   * tether enqueue} each) do not all wake the same first slots.
   */
  private final AtomicInteger cursor = new AtomicInteger(ThreadLocalRandom.current().nextInt(SLOTS));
  /** The slots this store's listener holds, by queue. */
  private final Map<String, Integer> own = new ConcurrentHashMap<>();
  private final Map<String, Read> reads = new ConcurrentHashMap<>();

  WakeRoster(String schema) {
    this.schema = schema;
  }

  /**
   * The channel every listening store of this schema hears: wake-ups for items of a queue the
   * notifier does not know (error replies, redrives by id).
   */
  String broadcastChannel() {
    return "tether_b" + (("tether:" + schema).hashCode() & 0x7fffffff);
  }

  /** The advisory-lock key of a queue of this schema: a non-negative 31-bit hash. */
  int keyOf(String queue) {
    return ("tether:" + schema + ":" + queue).hashCode() & 0x7fffffff;
  }

  /** The channel of one slot of a queue. */
  String channel(String queue, int slot) {
    return "tether_w" + keyOf(queue) + "_" + slot;
  }

  /**
   * On the listener's connection: takes the first free slot of {@code queue} (a session advisory
   * lock held until released or the connection closes) other than those this store holds for
   * other queues of the same key, and returns it, or -1 when all {@value #SLOTS} are taken.
   */
  int claim(Connection listener, String queue) throws SQLException {
    int key = keyOf(queue);
    List<Integer> held = new ArrayList<>();
    for (Map.Entry<String, Integer> e : own.entrySet()) {
      if (!e.getKey().equals(queue) && keyOf(e.getKey()) == key) {
        held.add(e.getValue()); // another queue whose key collides with this one's
      }
    }
    try (PreparedStatement ps = listener.prepareStatement(CLAIM)) {
      ps.setArray(1, listener.createArrayOf("integer", held.toArray()));
      ps.setInt(2, key);
      try (ResultSet rs = ps.executeQuery()) {
        int slot = rs.next() ? rs.getInt(1) : -1;
        if (slot >= 0) {
          own.put(queue, slot);
        }
        return slot;
      }
    }
  }

  /** On the listener's connection: gives up this store's slot of {@code queue}. */
  void release(Connection listener, String queue) throws SQLException {
    Integer slot = own.remove(queue);
    if (slot != null) {
      try (PreparedStatement ps = listener.prepareStatement("SELECT pg_advisory_unlock(?, ?)")) {
        ps.setInt(1, keyOf(queue));
        ps.setInt(2, slot);
        ps.execute();
      }
    }
  }

  /** The listener's connection is gone, and with it every slot. */
  void releasedAll() {
    own.clear();
  }

  /**
   * The channels to notify for {@code items} new items of {@code queue}: {@link #TARGETS} slots
   * of other stores, one more per {@value #ITEMS_PER_TARGET} items beyond the first, in rotation;
   * reads the roster on {@code c} when the last read is older than a second. Empty when no other
   * store waits for the queue.
   */
  String[] targets(Connection c, String queue, int items) throws SQLException {
    int wanted = TARGETS + Math.max(0, items - 1) / ITEMS_PER_TARGET;
    return pick(queue, current(c, queue), wanted);
  }

  /**
   * The channel to pass a wake-up for {@code queue} on to: the next slot after this store's in
   * slot order, around the ring, so that a chain of passes visits different stores.
   */
  String[] passOn(Connection c, String queue) throws SQLException {
    int[] all = current(c, queue);
    Integer mine = own.get(queue);
    if (mine == null) {
      return pick(queue, all, 1);
    }
    for (int slot : all) {
      if (slot > mine) {
        return new String[] {channel(queue, slot)};
      }
    }
    for (int slot : all) {
      if (slot != mine) {
        return new String[] {channel(queue, slot)}; // around the ring
      }
    }
    return new String[0];
  }

  /** This store's slot of {@code queue}, or -1 (whether a receiver must ask for one, and tests). */
  int ownSlot(String queue) {
    return own.getOrDefault(queue, -1);
  }

  private String[] pick(String queue, int[] all, int wanted) {
    Integer mine = own.get(queue);
    int start = Math.floorMod(cursor.getAndAdd(wanted), Math.max(1, all.length));
    List<String> out = new ArrayList<>(Math.min(wanted, all.length));
    for (int i = 0; i < all.length && out.size() < wanted; i++) {
      int slot = all[(start + i) % all.length];
      if (mine == null || slot != mine) {
        out.add(channel(queue, slot));
      }
    }
    return out.toArray(new String[0]);
  }

  private int[] current(Connection c, String queue) throws SQLException {
    long now = System.nanoTime();
    Read last = reads.get(queue);
    if (last != null && now - last.at() < (last.slots().length == 0 ? EMPTY_REFRESH_NANOS : REFRESH_NANOS)) {
      return last.slots();
    }
    List<Integer> found = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(ROSTER)) {
      ps.setLong(1, keyOf(queue));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          found.add((int) rs.getLong(1));
        }
      }
    }
    int[] s = new int[found.size()];
    for (int i = 0; i < s.length; i++) {
      s[i] = found.get(i);
    }
    if (reads.size() >= CACHED) {
      reads.clear();
    }
    reads.put(queue, new Read(s, now));
    return s;
  }

  /** A wake-up's payload: how often it was passed on, and the queue (empty: any queue). */
  static String payload(int hops, String queue) {
    return hops + ":" + (queue == null ? "" : queue);
  }

  /** The hops of a payload (0 when it has none). */
  static int hops(String payload) {
    int colon = payload == null ? -1 : payload.indexOf(':');
    if (colon <= 0) {
      return 0;
    }
    try {
      return Integer.parseInt(payload.substring(0, colon));
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /** The queue of a payload, or null for any queue. */
  static String queue(String payload) {
    int colon = payload == null ? -1 : payload.indexOf(':');
    String q = colon < 0 ? "" : payload.substring(colon + 1);
    return q.isEmpty() ? null : q;
  }
}
