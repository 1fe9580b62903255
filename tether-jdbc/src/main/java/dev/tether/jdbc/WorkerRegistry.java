package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The fleet: the table {@code tether_workers}, one row per worker process on the store, that each
 * process keeps fresh ({@link #register}, then {@link #refresh} every refresh interval, {@link
 * #deregister} on a clean stop) and that anyone can read ({@link #list}). Every instant is the
 * store's ({@link TetherStore}'s clock: the database's on PostgreSQL), so two machines' clocks
 * never meet.
 *
 * <p>Ageing: a row not refreshed for {@value #GONE_AFTER_REFRESHES} of its refresh intervals is
 * listed as {@link WorkerInfo#gone() gone} (the process died, hung or lost the store); {@link
 * #prune} deletes rows not seen for longer than it is given (workers call it with {@value
 * #DELETE_AFTER_REFRESHES} refresh intervals).
 *
 * <p>Cost: a refresh is one {@code UPDATE} of one row by primary key (plus reading the database
 * clock on PostgreSQL); a prune is one {@code DELETE} over the small table. Thread-safe.
 */
public final class WorkerRegistry {
  /** Refresh intervals after which a silent worker is listed as gone: {@value}. */
  public static final int GONE_AFTER_REFRESHES = 3;

  /** Refresh intervals after which workers delete a silent worker's row: {@value}. */
  public static final int DELETE_AFTER_REFRESHES = 60;

  private final TetherStore store;
  private final Clock clock;

  /**
   * Creates the registry on the store's clock.
   *
   * @param store the store
   */
  public WorkerRegistry(TetherStore store) {
    this(store, null);
  }

  /**
   * Creates the registry.
   *
   * @param store the store
   * @param clock the clock for every instant (tests), or null for the store's
   */
  public WorkerRegistry(TetherStore store, Clock clock) {
    this.store = Objects.requireNonNull(store, "store");
    this.clock = store.effectiveClock(clock);
  }

  /**
   * Registers (or re-registers) a process: its row is written afresh, started and last seen now.
   *
   * @param r what the process says of itself
   * @param refreshInterval how often it will call {@link #refresh}, positive
   */
  public void register(WorkerInfo.Registration r, Duration refreshInterval) {
    Objects.requireNonNull(r, "registration");
    if (refreshInterval == null || refreshInterval.isNegative() || refreshInterval.isZero()) {
      throw new IllegalArgumentException("refreshInterval must be positive, was " + refreshInterval);
    }
    StoreEngine engine = store.storeEngine();
    store.write("registering worker " + r.workerId(), c -> {
      Instant now = store.now(c, clock);
      try (PreparedStatement del = c.prepareStatement("DELETE FROM tether_workers WHERE worker_id = ?")) {
        del.setString(1, r.workerId());
        del.executeUpdate();
      }
      try (PreparedStatement ps = c.prepareStatement(
          "INSERT INTO tether_workers (worker_id, host, pid, version, queues, loops, concurrency,"
              + " in_flight, refresh_millis, started_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)")) {
        ps.setString(1, r.workerId());
        ps.setString(2, r.host());
        ps.setLong(3, r.pid());
        ps.setString(4, r.version());
        ps.setString(5, String.join(",", r.queues()));
        ps.setInt(6, r.loops());
        ps.setInt(7, r.concurrency());
        ps.setLong(8, refreshInterval.toMillis());
        engine.setInstant(ps, 9, now);
        engine.setInstant(ps, 10, now);
        ps.executeUpdate();
      }
      return null;
    });
  }

  /**
   * Marks a process seen now, with how many items it runs.
   *
   * @param workerId the process's worker id
   * @param inFlight items it runs now
   * @return false when its row is gone (deleted as dead by another process): register again
   */
  public boolean refresh(String workerId, int inFlight) {
    StoreEngine engine = store.storeEngine();
    return store.write("refreshing worker " + workerId, c -> {
      try (PreparedStatement ps = c.prepareStatement(
          "UPDATE tether_workers SET last_seen_at = ?, in_flight = ? WHERE worker_id = ?")) {
        engine.setInstant(ps, 1, store.now(c, clock));
        ps.setInt(2, inFlight);
        ps.setString(3, workerId);
        return ps.executeUpdate() == 1;
      }
    });
  }

  /**
   * Removes a process's row (a clean stop).
   *
   * @param workerId the worker id
   * @return whether a row was removed
   */
  public boolean deregister(String workerId) {
    return store.write("deregistering worker " + workerId, c -> {
      try (PreparedStatement ps = c.prepareStatement("DELETE FROM tether_workers WHERE worker_id = ?")) {
        ps.setString(1, workerId);
        return ps.executeUpdate() == 1;
      }
    });
  }

  /**
   * Deletes the rows of processes not seen for longer than {@code notSeenFor}.
   *
   * @param notSeenFor how long a row may stay silent
   * @return how many rows were deleted
   */
  public int prune(Duration notSeenFor) {
    Objects.requireNonNull(notSeenFor, "notSeenFor");
    StoreEngine engine = store.storeEngine();
    return store.write("pruning silent workers", c -> {
      try (PreparedStatement ps = c.prepareStatement("DELETE FROM tether_workers WHERE last_seen_at < ?")) {
        engine.setInstant(ps, 1, store.now(c, clock).minus(notSeenFor));
        return ps.executeUpdate();
      }
    });
  }

  /**
   * Lists the registered processes, live ones first, then by worker id.
   *
   * @return the processes, with {@link WorkerInfo#gone()} decided on the store's clock
   */
  public List<WorkerInfo> list() {
    StoreEngine engine = store.storeEngine();
    return store.read("listing workers", c -> list(c, engine, store.now(c, clock)));
  }

  /** The rows, aged at {@code now}, on the caller's connection. */
  List<WorkerInfo> list(Connection c, StoreEngine engine, Instant now) throws SQLException {
    List<WorkerInfo> out = new ArrayList<>();
    // Leases held now, by holder: a row's in_flight is as of its last refresh (up to one
    // interval old), so a worker whose loops hold leases as "workerId" or "workerId/..." shows
    // those instead. One row per holder (loop), read through the in-progress partial index.
    Map<String, Integer> leasesByHolder = new HashMap<>();
    try (PreparedStatement ps = c.prepareStatement("SELECT lease_holder, COUNT(*) FROM tether_work_items"
            + " WHERE status = 'in_progress' AND lease_holder IS NOT NULL GROUP BY lease_holder");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        leasesByHolder.put(rs.getString(1), rs.getInt(2));
      }
    }
    try (PreparedStatement ps = c.prepareStatement("SELECT * FROM tether_workers ORDER BY worker_id");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        Duration refresh = Duration.ofMillis(rs.getLong("refresh_millis"));
        Instant seen = engine.getInstant(rs, "last_seen_at");
        Duration since = Duration.between(seen, now);
        if (since.isNegative()) {
          since = Duration.ZERO;
        }
        String queues = rs.getString("queues");
        String id = rs.getString("worker_id");
        int leased = leasesHeldBy(id, leasesByHolder);
        out.add(new WorkerInfo(id, rs.getString("host"), rs.getLong("pid"),
            rs.getString("version"), queues.isEmpty() ? List.of() : Arrays.asList(queues.split(",")),
            rs.getInt("loops"), rs.getInt("concurrency"), leased > 0 ? leased : rs.getInt("in_flight"), refresh,
            engine.getInstant(rs, "started_at"), seen, since,
            since.compareTo(refresh.multipliedBy(GONE_AFTER_REFRESHES)) > 0));
      }
    }
    out.sort((a, b) -> a.gone() != b.gone() ? (a.gone() ? 1 : -1) : a.workerId().compareTo(b.workerId()));
    return out;
  }

  /** The leases held by {@code workerId} itself or by its loops, named {@code workerId/...}. */
  static int leasesHeldBy(String workerId, Map<String, Integer> leasesByHolder) {
    int n = 0;
    String prefix = workerId + "/";
    for (Map.Entry<String, Integer> e : leasesByHolder.entrySet()) {
      if (e.getKey().equals(workerId) || e.getKey().startsWith(prefix)) {
        n += e.getValue();
      }
    }
    return n;
  }
}
