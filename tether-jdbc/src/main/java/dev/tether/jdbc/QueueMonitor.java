package dev.tether.jdbc;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.SortedMap;

/**
 * Read-only monitoring queries over a store: counts by status per queue, stale and in-flight
 * leases, the retry distribution, and item lookup with its audit trail. Thread-safe; each method
 * runs one short read.
 */
public final class QueueMonitor {
  private final TetherStore store;
  private final Clock clock;
  private final StoreSql sql;

  /**
   * Creates a monitor using the store's clock.
   *
   * @param store the store
   */
  public QueueMonitor(TetherStore store) {
    this(store, null);
  }

  /**
   * Creates a monitor.
   *
   * @param store the store
   * @param clock the clock for ages and time left, or null for the store's
   */
  public QueueMonitor(TetherStore store, Clock clock) {
    this.store = Objects.requireNonNull(store, "store");
    this.clock = store.effectiveClock(clock);
    this.sql = store.sql();
  }

  /**
   * Returns how many items each queue holds in each status (statuses with no item are omitted).
   *
   * @return the counts, ordered by queue then status
   */
  public List<QueueCount> countsByStatus() {
    return store.read("counting items by status", sql.monitor()::countsByStatus);
  }

  /**
   * Returns the in-flight leases of {@code queue} (or of every queue), soonest expiry first.
   *
   * @param queue the queue, or null for all
   * @return the leases
   */
  public List<LeaseInfo> inFlight(String queue) {
    return leases(queue, null);
  }

  /**
   * Returns in-flight leases whose last heartbeat is older than {@code heartbeatOlderThan}.
   *
   * @param heartbeatOlderThan the staleness threshold
   * @return the stale leases, oldest heartbeat first
   */
  public List<LeaseInfo> staleLeases(Duration heartbeatOlderThan) {
    Objects.requireNonNull(heartbeatOlderThan, "heartbeatOlderThan");
    return leases(null, heartbeatOlderThan);
  }

  /**
   * Returns the store's current instant: the database's clock on PostgreSQL (or this monitor's
   * clock when one is set), so that ages computed from stored instants are on one clock.
   *
   * @return the instant
   */
  public java.time.Instant now() {
    return store.read("reading the store's clock", c -> store.now(c, clock));
  }

  private List<LeaseInfo> leases(String queue, Duration staleAfter) {
    return store.read("listing leases", c -> sql.monitor().leases(c, queue, staleAfter, store.now(c, clock)));
  }

  /**
   * Returns how many finished ({@code completed} or {@code failed}) items of {@code queue} took
   * each number of deliveries.
   *
   * @param queue the queue, or null for all
   * @return delivery count to number of items, ascending
   */
  public SortedMap<Integer, Long> retryDistribution(String queue) {
    return store.read("computing the retry distribution", c -> sql.monitor().retryDistribution(c, queue));
  }

  /**
   * Returns an item with its checkpoints (oldest first).
   *
   * @param itemId the item
   * @return the item, or empty if unknown
   */
  public Optional<WorkItem> item(long itemId) {
    return store.read("reading item " + itemId, c -> sql.reads().find(c, itemId, true));
  }

  /**
   * Returns the failed (dead-lettered) items of {@code queue}, oldest first, without checkpoints.
   *
   * @param queue the queue
   * @param limit most items to return
   * @return the items
   */
  public List<WorkItem> failedItems(String queue, int limit) {
    return store.read("listing failed items", c -> sql.monitor().failed(c, queue, limit));
  }

  /**
   * Lists items as {@code query} says (queue and status filters, order, limit), without their
   * checkpoints (use {@link #item(long)} for the audit trail of one item). Each returned item
   * carries its input and output bytes.
   *
   * @param query which items, in which order, how many
   * @return the items, possibly empty
   * @throws NullPointerException if {@code query} is null
   * @throws StoreUnavailableException if the database cannot be reached
   * @throws TetherStoreException on another database error
   */
  public List<WorkItem> items(ItemQuery query) {
    Objects.requireNonNull(query, "query");
    return store.read("listing items (" + query + ")", c -> sql.monitor().items(c, query));
  }

  /**
   * Returns how many items of {@code queue} are {@code pending}, including those whose {@code
   * available_at} (a retry backoff or hand-back delay) has not passed yet.
   *
   * @param queue the queue
   * @return the count
   * @throws NullPointerException if {@code queue} is null
   * @throws StoreUnavailableException if the database cannot be reached
   * @throws TetherStoreException on another database error
   */
  public long pendingCount(String queue) {
    Objects.requireNonNull(queue, "queue");
    return store.read("counting the pending items of queue '" + queue + "'", c -> sql.monitor().pendingCount(c, queue));
  }

  /**
   * Returns how many checkpoints of each kind the store holds over every queue (for example
   * {@link Checkpoint#LEASE_EXPIRED}: redeliveries after an expired lease). Kinds with no
   * checkpoint are omitted. Retention cleanup ({@link RecoverySweep#cleanup()}) and purges
   * ({@link QueueAdmin}) lower the counts.
   *
   * @return kind to count, ordered by kind
   * @throws StoreUnavailableException if the database cannot be reached
   * @throws TetherStoreException on another database error
   */
  public SortedMap<String, Long> countsByCheckpointKind() {
    return store.read("counting checkpoints by kind", sql.monitor()::checkpointCounts);
  }

}
