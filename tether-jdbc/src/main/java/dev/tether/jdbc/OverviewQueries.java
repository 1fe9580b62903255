package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Read-only queries for a dashboard whose cost is bounded by what they return, whatever the
 * store holds: keyset pages of items, counts that stop at a cap, the queues (an index skip scan,
 * not a scan of the items), in-flight and scheduled items, and throughput per minute from a
 * bounded number of index entries. {@link QueueMonitor} has the exact (whole-store) counts.
 *
 * <p>Uses the indexes {@code (status, id)} and {@code (queue, status, id)} over every item not in
 * progress (schema version 9), the leased ones for items in progress (as many as leases are held),
 * and the scheduled, finished and checkpoint indexes. Each statement names its statuses as
 * literals, with the index's own condition beside them, so that both engines' planners can prove
 * that a partial index holds the rows asked for. Thread-safe; each method runs one short read (a
 * few statements on one connection).
 */
public final class OverviewQueries {
  /** Bytes of an item's input a listing reads: {@value}. */
  public static final int INPUT_PREFIX_BYTES = 2048;

  /** Characters of an item's error a listing reads: {@value}. */
  public static final int ERROR_PREFIX_CHARS = 1000;

  /** The statuses, in the order counts are listed. */
  private static final WorkStatus[] STATUSES = WorkStatus.values();

  private static final String LIST_COLUMNS =
      "id, queue, task_id, work_type, status, priority, lease_holder, lease_token,"
          + " lease_acquired_at, lease_expires_at, heartbeat_at, delivery_count, attempts, max_attempts,"
          + " available_at, idempotency_key, reply_to, SUBSTR(input_data, 1, " + INPUT_PREFIX_BYTES
          + ") AS input_data, NULL AS output_data, SUBSTR(error_message, 1, " + ERROR_PREFIX_CHARS
          + ") AS error_message, created_at, started_at, completed_at, updated_at, NULL AS progress,"
          + " progress_at, progress_delivery, reply_of, reply_error, NULL AS stdout_tail,"
          + " NULL AS stderr_tail, output_at, output_delivery";

  private final TetherStore store;
  private final Clock clock;
  private final StoreEngine engine;
  private final ItemReads rows;

  /**
   * Creates the queries on the store's clock.
   *
   * @param store the store
   */
  public OverviewQueries(TetherStore store) {
    this(store, null);
  }

  /**
   * Creates the queries.
   *
   * @param store the store
   * @param clock the clock for "now" (tests), or null for the store's
   */
  public OverviewQueries(TetherStore store, Clock clock) {
    this.store = Objects.requireNonNull(store, "store");
    this.clock = store.effectiveClock(clock);
    this.engine = store.storeEngine();
    this.rows = store.sql().reads();
  }

  /**
   * Returns the store's current instant (the database's clock on PostgreSQL).
   *
   * @return the instant
   */
  public Instant now() {
    return store.read("reading the store's clock", c -> store.now(c, clock));
  }

  /**
   * Returns the queues that hold items, in name order, at most {@code max}: two index probes per
   * queue (a skip scan of the {@code (queue, status, id)} index and of the leased rows' {@code
   * (queue, lease_expires_at)} index), never a scan of the items.
   *
   * @param max most queues to return, at least 1
   * @return the queue names
   */
  public List<String> queues(int max) {
    positive(max, "max");
    return store.read("listing queues", c -> queues(c, max));
  }

  private List<String> queues(Connection c, int max) throws SQLException {
    List<String> out = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(QUEUES)) { // planned once per connection: see reusedPlan
      ps.setInt(1, max);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getString(1));
        }
      }
    }
    return out;
  }

  /**
   * The smallest queue name among the items not in progress and among those in progress, as two
   * rows {@code m} (null where none): each the first entry of one index in queue order.
   */
  private static final String FIRST_QUEUES =
      "SELECT MIN(queue) AS m FROM tether_work_items WHERE status <> 'in_progress'"
          + " UNION ALL SELECT MIN(queue) AS m FROM tether_work_items WHERE status = 'in_progress'";

  /** As {@link #FIRST_QUEUES}, after the recursive query's {@code q.queue}. */
  private static final String NEXT_QUEUES =
      "SELECT MIN(queue) AS m FROM tether_work_items WHERE status <> 'in_progress' AND queue > q.queue"
          + " UNION ALL SELECT MIN(queue) AS m FROM tether_work_items"
          + " WHERE status = 'in_progress' AND queue > q.queue";

  /** The queues in name order, a skip scan of both indexes. Parameter: the most queues. */
  static final String QUEUES =
      "WITH RECURSIVE q(queue) AS (SELECT (SELECT MIN(m) FROM (" + FIRST_QUEUES + ") f)"
          + " UNION ALL SELECT (SELECT MIN(m) FROM (" + NEXT_QUEUES + ") n)"
          + " FROM q WHERE q.queue IS NOT NULL)"
          + " SELECT queue FROM q WHERE queue IS NOT NULL LIMIT ?";

  /**
   * The condition that selects the rows of one status ({@code null}: every status but in
   * progress), with literals: for a status other than in progress it carries the condition of the
   * {@code (status, id)} and {@code (queue, status, id)} indexes word for word, which is how
   * SQLite's planner finds a partial index usable (PostgreSQL proves it either way); in progress
   * is the condition of the leased indexes.
   */
  static String statusTerm(WorkStatus status) {
    if (status == null) {
      return "status <> 'in_progress'";
    }
    switch (status) {
      case PENDING:
        return "status = 'pending' AND status <> 'in_progress'";
      case IN_PROGRESS:
        return "status = 'in_progress'";
      case COMPLETED:
        return "status = 'completed' AND status <> 'in_progress'";
      case FAILED:
        return "status = 'failed' AND status <> 'in_progress'";
      case CANCELLED:
        return "status = 'cancelled' AND status <> 'in_progress'";
      default:
        throw new IllegalStateException("unhandled status " + status + "; indicates a bug");
    }
  }

  /**
   * Returns, for each of the given queues, how many items it holds in each status, each count
   * stopping at {@code cap} (at most {@code cap + 1} index entries read per count).
   *
   * @param queues the queues
   * @param cap the cap, at least 1
   * @return queue to status to count, in the order given
   */
  public Map<String, Map<WorkStatus, CappedCount>> counts(List<String> queues, int cap) {
    positive(cap, "cap");
    return store.read("counting items (capped)", c -> {
      Map<String, Map<WorkStatus, CappedCount>> out = new LinkedHashMap<>();
      for (String q : queues) {
        out.put(q, counts(c, q, cap));
      }
      return out;
    });
  }

  /**
   * Returns how many items the store holds in each status over every queue, each count stopping
   * at {@code cap}.
   *
   * @param cap the cap, at least 1
   * @return status to count
   */
  public Map<WorkStatus, CappedCount> totals(int cap) {
    positive(cap, "cap");
    return store.read("counting items (capped)", c -> counts(c, null, cap));
  }

  private Map<WorkStatus, CappedCount> counts(Connection c, String queue, int cap) throws SQLException {
    List<String> one = new ArrayList<>();
    one.add(queue);
    return countsOf(c, one, cap).get(0);
  }

  /**
   * The capped counts of each of {@code queues} (a null element: over every queue), in one
   * statement: one row per element, one scalar subquery per status.
   */
  private List<Map<WorkStatus, CappedCount>> countsOf(Connection c, List<String> queues, int cap)
      throws SQLException {
    List<Map<WorkStatus, CappedCount>> out = new ArrayList<>();
    if (queues.isEmpty()) {
      return out;
    }
    StringBuilder sql = new StringBuilder();
    // the limit as a literal: with a parameter PostgreSQL's generic plan would assume a tenth of
    // the rows and never be chosen, so the statement would be planned at every poll
    long capLimit = (long) cap + 1;
    for (int row = 0; row < queues.size(); row++) {
      sql.append(row == 0 ? "SELECT " : " UNION ALL SELECT ").append(row).append(" AS k");
      for (int alias = 0; alias < STATUSES.length; alias++) {
        sql.append(", (SELECT COUNT(*) FROM (SELECT 1 FROM tether_work_items WHERE ")
            .append(queues.get(row) != null ? "queue = ? AND " : "").append(statusTerm(STATUSES[alias]))
            .append(" LIMIT ").append(capLimit).append(") c").append(alias).append(")");
      }
    }
    try (PreparedStatement ps = c.prepareStatement(sql.toString())) { // reusedPlan
      int p = 1;
      for (String queue : queues) {
        for (int i = 0; i < STATUSES.length; i++) {
          if (queue != null) {
            ps.setString(p++, queue);
          }
        }
        out.add(null);
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          Map<WorkStatus, CappedCount> m = new EnumMap<>(WorkStatus.class);
          for (int i = 0; i < STATUSES.length; i++) {
            long n = rs.getLong(i + 2);
            m.put(STATUSES[i], n > cap ? new CappedCount(cap, true) : new CappedCount(n, false));
          }
          out.set(rs.getInt(1), m);
        }
      }
    }
    return out;
  }

  /**
   * Reads everything a dashboard poll shows, on one connection with one reading of the store's
   * clock: the queues (at most {@code maxQueues}), their counts and the totals (capped at {@code
   * cap}), the in-flight, newest failed and soonest scheduled items ({@code listSize} each), the
   * fleet, and one page of items.
   *
   * @param page the page of items
   * @param cap where counts stop
   * @param maxQueues most queues counted
   * @param listSize items per list
   * @return the overview
   */
  public StoreOverview overview(ItemPageRequest page, int cap, int maxQueues, int listSize) {
    Objects.requireNonNull(page, "page");
    positive(cap, "cap");
    positive(maxQueues, "maxQueues");
    positive(listSize, "listSize");
    WorkerRegistry registry = new WorkerRegistry(store, clock);
    return store.read("reading the dashboard overview", c -> {
      Instant now = store.now(c, clock);
      List<String> queues = queues(c, maxQueues + 1);
      boolean more = queues.size() > maxQueues;
      if (more) {
        queues = new ArrayList<>(queues.subList(0, maxQueues));
      }
      // every queue counted: the totals are their sums (capped where a summand is); else counted
      List<String> keys = new ArrayList<>(queues);
      if (more) {
        keys.add(null);
      }
      List<Map<WorkStatus, CappedCount>> counts = countsOf(c, keys, cap);
      Map<String, Map<WorkStatus, CappedCount>> byQueue = new LinkedHashMap<>();
      Map<WorkStatus, CappedCount> totals = new EnumMap<>(WorkStatus.class);
      for (WorkStatus s : STATUSES) {
        totals.put(s, new CappedCount(0, false));
      }
      for (int i = 0; i < queues.size(); i++) {
        byQueue.put(queues.get(i), counts.get(i));
        counts.get(i).forEach((s, n) -> totals.merge(s, n, CappedCount::plus));
      }
      return new StoreOverview(now, queues, more, more ? counts.get(queues.size()) : totals, byQueue,
          inFlight(c, listSize),
          page(c, new ItemPageRequest(null, WorkStatus.FAILED, null, null, listSize)).items(),
          scheduled(c, queues, listSize),
          registry.list(c, engine, now),
          page(c, page));
    });
  }

  /**
   * Returns one page of items, newest first (see {@link ItemPageRequest} for the filters and how
   * the text search is bounded).
   *
   * @param request the page
   * @return the page
   */
  public ItemPage page(ItemPageRequest request) {
    Objects.requireNonNull(request, "request");
    return store.read("listing a page of items", c -> page(c, request));
  }

  private ItemPage page(Connection c, ItemPageRequest r) throws SQLException {
    if (r.text() == null) {
      List<WorkItem> items = query(c, window(r, r.limit() + 1, LIST_COLUMNS),
          ps -> bindWindow(ps, 1, r, r.limit() + 1));
      boolean more = items.size() > r.limit();
      if (more) {
        items = items.subList(0, r.limit());
      }
      return new ItemPage(items, more ? items.get(items.size() - 1).id() : null, false);
    }
    int scan = ItemPageRequest.TEXT_SCAN_ROWS;
    byte[] needle = r.textBytes();
    // the newest `scan` rows that pass the other filters, then the text match among them
    List<WorkItem> items = query(c, "SELECT * FROM (" + window(r, scan, LIST_COLUMNS + ", input_data AS full_input")
        + ") w WHERE " + engine.bytesContain("full_input") + " ORDER BY id DESC LIMIT ?", ps -> {
          int p = bindWindow(ps, 1, r, scan);
          engine.setBytes(ps, p++, needle);
          ps.setInt(p, r.limit() + 1);
          return p + 1;
        });
    if (items.size() > r.limit()) {
      items = items.subList(0, r.limit());
      return new ItemPage(items, items.get(items.size() - 1).id(), false);
    }
    // fewer matches than a page: was the whole window looked at, and did it end the items?
    long seen;
    long lowest;
    try (PreparedStatement ps = prepare(c, 
        "SELECT COUNT(*), MIN(id) FROM (" + window(r, scan, "id") + ") w")) {
      bindWindow(ps, 1, r, scan);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        seen = rs.getLong(1);
        lowest = rs.getLong(2);
      }
    }
    boolean incomplete = seen >= scan;
    return new ItemPage(items, incomplete ? lowest : null, incomplete);
  }

  /**
   * The {@code columns} of the newest {@code n} items that pass the request's queue, status and
   * keyset filters, newest first, through an index that gives them in id order: {@code (status,
   * id)}, {@code (queue, status, id)} (one branch per status for a queue alone) or the primary key;
   * items in progress come from the leased indexes, sorted (as many as leases are held): their
   * order is {@code +id}, which no index gives, so that neither planner walks the primary key
   * backwards past every newer item to find them.
   */
  static String window(ItemPageRequest r, int n, String columns) {
    if (r.queue() != null && r.status() == null) {
      return newestOfEachStatus(columns, r.beforeId() != null);
    }
    List<String> where = new ArrayList<>();
    if (r.queue() != null) {
      where.add("queue = ?");
    }
    if (r.status() != null) {
      where.add(statusTerm(r.status()));
    }
    if (r.beforeId() != null) {
      where.add(r.status() == WorkStatus.IN_PROGRESS ? "+id < ?" : "id < ?");
    }
    return "SELECT " + columns + " FROM tether_work_items"
        + (where.isEmpty() ? "" : " WHERE " + String.join(" AND ", where))
        + (r.status() == WorkStatus.IN_PROGRESS ? " ORDER BY +id DESC LIMIT ?" : " ORDER BY id DESC LIMIT ?");
  }

  /**
   * The {@code columns} of a queue's newest items of every status: the newest of each status from
   * its index, merged. Parameters: per status the queue, the keyset bound when {@code keyset}, and
   * the limit; then the limit. Also {@link QueueMonitor#items}' for a queue of every status.
   */
  static String newestOfEachStatus(String columns, boolean keyset) {
    String before = keyset ? " AND id < ?" : "";
    // in progress: +id, so that the keyset bound is no range of the primary key either (SQLite)
    String beforeLeased = keyset ? " AND +id < ?" : "";
    StringBuilder sb = new StringBuilder("SELECT * FROM (");
    for (int alias = 0; alias < STATUSES.length; alias++) {
      sb.append(alias == 0 ? "" : " UNION ALL ").append("SELECT * FROM (SELECT ").append(columns)
          .append(" FROM tether_work_items WHERE queue = ? AND ").append(statusTerm(STATUSES[alias]))
          .append(STATUSES[alias] == WorkStatus.IN_PROGRESS ? beforeLeased : before)
          .append(STATUSES[alias] == WorkStatus.IN_PROGRESS ? " ORDER BY +id DESC LIMIT ?) b" : " ORDER BY id DESC LIMIT ?) b")
          .append(alias);
    }
    return sb.append(") u ORDER BY id DESC LIMIT ?").toString();
  }

  static int bindWindow(PreparedStatement ps, int p, ItemPageRequest r, int n) throws SQLException {
    if (r.queue() != null && r.status() == null) {
      for (int alias = 0; alias < STATUSES.length; alias++) {
        ps.setString(p++, r.queue());
        if (r.beforeId() != null) {
          ps.setLong(p++, r.beforeId());
        }
        ps.setInt(p++, n);
      }
      ps.setInt(p++, n);
      return p;
    }
    if (r.queue() != null) {
      ps.setString(p++, r.queue());
    }
    if (r.beforeId() != null) {
      ps.setLong(p++, r.beforeId());
    }
    ps.setInt(p++, n);
    return p;
  }

  /**
   * Returns the in-progress items, soonest lease expiry first (ties in no particular order), at
   * most {@code limit} (the leased index).
   *
   * @param limit most items, at least 1
   * @return the items, as {@link ItemPage#items()} describes them
   */
  public List<WorkItem> inFlight(int limit) {
    positive(limit, "limit");
    return store.read("listing in-flight items", c -> inFlight(c, limit));
  }

  private List<WorkItem> inFlight(Connection c, int limit) throws SQLException {
    // the leased index's order alone, so that LIMIT stops the scan (a tie-break would sort every lease)
    return list(c, "status = 'in_progress'", "lease_expires_at", limit, ps -> 1);
  }

  /**
   * Returns pending items that wait for a due time (scheduled for later, or retrying after a
   * backoff), soonest due first, at most {@code limit}: at most {@code limit} per queue of {@code
   * queues} from the scheduled index, merged.
   *
   * @param queues the queues to look in (for example {@link #queues(int)})
   * @param limit most items, at least 1
   * @return the items, as {@link ItemPage#items()} describes them; {@link WorkItem#deliveryCount()}
   *     above 0 marks a retry
   */
  public List<WorkItem> scheduled(List<String> queues, int limit) {
    positive(limit, "limit");
    return store.read("listing scheduled items", c -> scheduled(c, queues, limit));
  }

  /**
   * One statement: the soonest {@code limit} of each queue in the scheduled index's own order (no
   * tie-break on id, which would sort every item of a batch delayed to one instant), merged.
   */
  private List<WorkItem> scheduled(Connection c, List<String> queues, int limit) throws SQLException {
    if (queues.isEmpty()) {
      return List.of();
    }
    StringBuilder sql = new StringBuilder("SELECT * FROM (");
    for (int alias = 0; alias < queues.size(); alias++) {
      sql.append(alias == 0 ? "" : " UNION ALL ").append("SELECT * FROM (SELECT ").append(LIST_COLUMNS)
          .append(" FROM tether_work_items WHERE queue = ? AND status = 'pending' AND scheduled = TRUE")
          .append(" ORDER BY available_at LIMIT ?) s").append(alias);
    }
    sql.append(") u ORDER BY available_at, id LIMIT ?");
    return query(c, sql.toString(), ps -> {
      int p = 1;
      for (String q : queues) {
        ps.setString(p++, q);
        ps.setInt(p++, limit);
      }
      ps.setInt(p++, limit);
      return p;
    });
  }

  /**
   * Returns what happened in each of the last {@code minutes} minutes (the current one included),
   * oldest first, from at most {@code maxRows} finished items and {@code maxRows} checkpoints, the
   * newest: past that, older minutes are marked {@link ThroughputMinute#partial() partial}.
   *
   * @param minutes how many minutes, 1 to 1,440
   * @param maxRows most index entries read per series, at least 1
   * @return one entry per minute
   */
  public List<ThroughputMinute> throughput(int minutes, int maxRows) {
    if (minutes < 1 || minutes > 1440) {
      throw new IllegalArgumentException("minutes must be in 1..1440, was " + minutes);
    }
    positive(maxRows, "maxRows");
    return store.read("reading throughput", c -> {
      Instant now = store.now(c, clock);
      Instant first = now.truncatedTo(ChronoUnit.MINUTES).minus(Duration.ofMinutes(minutes - 1));
      TreeMap<Instant, long[]> buckets = new TreeMap<>();
      for (int i = 0; i < minutes; i++) {
        buckets.put(first.plus(Duration.ofMinutes(i)), new long[3]);
      }
      Instant cutFinished = series(c, "SELECT completed_at AS t, status FROM tether_work_items"
          + " WHERE status IN ('completed', 'failed', 'cancelled') AND completed_at >= ?"
          + " ORDER BY completed_at DESC LIMIT ?", first, maxRows, buckets, true);
      Instant cutRedelivered = series(c, "SELECT created_at AS t, kind FROM tether_work_item_checkpoints"
          + " WHERE created_at >= ? ORDER BY created_at DESC LIMIT ?", first, maxRows, buckets, false);
      List<ThroughputMinute> out = new ArrayList<>(minutes);
      for (Map.Entry<Instant, long[]> e : buckets.entrySet()) {
        // rows older than a cut were not read: every minute that starts at or before it is partial
        boolean partial = (cutFinished != null && !cutFinished.isBefore(e.getKey()))
            || (cutRedelivered != null && !cutRedelivered.isBefore(e.getKey()));
        out.add(new ThroughputMinute(e.getKey(), e.getValue()[0], e.getValue()[1], e.getValue()[2], partial));
      }
      return out;
    });
  }

  /** Adds one series to the buckets; returns the oldest instant read when the limit was hit. */
  private Instant series(Connection c, String sql, Instant from, int maxRows, TreeMap<Instant, long[]> buckets,
      boolean finished) throws SQLException {
    int n = 0;
    Instant last = null;
    try (PreparedStatement ps = prepare(c, sql)) {
      engine.setInstant(ps, 1, from);
      ps.setInt(2, maxRows);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          n++;
          last = engine.getInstant(rs, "t");
          Map.Entry<Instant, long[]> b = buckets.floorEntry(last);
          if (b == null) {
            continue;
          }
          String what = rs.getString(2);
          if (finished) {
            if (what.equals("completed")) {
              b.getValue()[0]++;
            } else if (what.equals("failed")) {
              b.getValue()[1]++;
            }
          } else if (what.equals(Checkpoint.LEASE_EXPIRED) || what.equals(Checkpoint.HANDED_BACK)) {
            b.getValue()[2]++;
          }
        }
      }
    }
    return n >= maxRows ? last : null;
  }

  /** Binds a statement's parameters from 1; returns the next free index. */
  @FunctionalInterface
  private interface Binder {
    int bind(PreparedStatement ps) throws SQLException;
  }

  /** The items of a whole query whose every parameter {@code binder} binds. */
  private List<WorkItem> query(Connection c, String sql, Binder binder) throws SQLException {
    try (PreparedStatement ps = prepare(c, sql)) {
      binder.bind(ps);
      List<WorkItem> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rows.map(rs, List.of()));
        }
      }
      return out;
    }
  }

  private List<WorkItem> list(Connection c, String where, String order, int limit, Binder binder)
      throws SQLException {
    try (PreparedStatement ps = prepare(c, 
        "SELECT " + LIST_COLUMNS + " FROM tether_work_items WHERE " + where + " ORDER BY " + order + " LIMIT ?")) {
      int p = binder.bind(ps);
      ps.setInt(p, limit);
      List<WorkItem> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rows.map(rs, List.of()));
        }
      }
      return out;
    }
  }

  /*
   * reusedPlan: the queue list and the counts name their statuses as literals and take only queue
   * names and limits as parameters, so one plan fits every execution, and the driver keeps it on
   * each connection (after a few uses): planning them took PostgreSQL longer than running them
   * (the queue list 3.4 ms against 0.5 ms, the counts of four queues 4.5 ms against 8 ms, on
   * 1,000,000 items). The other reads depend on their parameters (a status, a keyset bound), so
   * they are planned at every execution.
   */

  /** Prepares an ad hoc read, planned with its parameters at every execution. */
  private PreparedStatement prepare(Connection c, String sql) throws SQLException {
    PreparedStatement ps = c.prepareStatement(sql);
    try {
      engine.plannedPerExecution(ps);
    } catch (SQLException | RuntimeException e) {
      ps.close();
      throw e;
    }
    return ps;
  }

  private static void positive(int n, String name) {
    if (n < 1) {
      throw new IllegalArgumentException(name + " must be at least 1, was " + n);
    }
  }
}
