package dev.tether.jdbc;

import dev.tether.QueueName;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Enqueues, leases, renews and releases work items for one worker.
 *
 * <p><b>Fencing.</b> Every acquisition gets a new unguessable token; {@link #renew}, {@link
 * #release} and {@link #complete} name it and are conditional updates on (id, token, state). A
 * token stays valid until the item is leased again or finalized; once another worker took the
 * item over, the old token is refused with {@link LeaseConflictException}, and once the item was
 * reclaimed, handed back or deleted with {@link LeaseExpiredException}; either way nothing
 * changes.
 *
 * <p><b>Expiry is redelivery.</b> {@link #acquire} also takes items whose lease expired: each such
 * expiry is recorded once (a {@code lease_expired} checkpoint), and an item whose deliveries have
 * reached {@code maxAttempts} is marked {@code failed} instead of being delivered again — the same
 * outcome {@link RecoverySweep} reaches for the same item.
 *
 * <p><b>Time.</b> Instants and expiry come from the configured clock, else the store's, else the
 * database clock (PostgreSQL {@code clock_timestamp()}) or the system clock (SQLite).
 *
 * <p>Thread-safe; every method blocks for one short transaction. Database failures throw {@link
 * StoreUnavailableException} (transient) or {@link TetherStoreException}.
 */
public final class LeaseManager {
  private final TetherStore store;
  private final String workerId;
  private final LeaseManagerConfig config;
  private final Clock clock;
  private final StoreSql sql;

  /**
   * Creates a lease manager with the default configuration.
   *
   * @param store the store
   * @param workerId this worker's id, recorded as lease holder; not blank
   * @throws IllegalArgumentException if the worker id is blank
   */
  public LeaseManager(TetherStore store, String workerId) {
    this(store, workerId, LeaseManagerConfig.defaults());
  }

  /**
   * Creates a lease manager.
   *
   * @param store the store
   * @param workerId this worker's id, recorded as lease holder; not blank
   * @param config the options
   * @throws IllegalArgumentException if the worker id is blank
   */
  public LeaseManager(TetherStore store, String workerId, LeaseManagerConfig config) {
    this.store = Objects.requireNonNull(store, "store");
    this.workerId = Objects.requireNonNull(workerId, "workerId");
    this.config = Objects.requireNonNull(config, "config");
    if (workerId.isBlank()) {
      throw new IllegalArgumentException("workerId must not be blank");
    }
    this.clock = store.effectiveClock(config.clock());
    this.sql = store.sql();
  }

  /**
   * Returns this worker's id.
   *
   * @return the worker id
   */
  public String workerId() {
    return workerId;
  }

  /**
   * Returns the store.
   *
   * @return the store
   */
  public TetherStore store() {
    return store;
  }

  // ------------------------------------------------------------------ enqueue

  /**
   * Enqueues one item in its own transaction. With an idempotency key already present on the
   * queue, returns the existing item's id and writes nothing.
   *
   * @param item the item
   * @return the item id
   * @throws StoreUnavailableException if the database cannot be reached
   */
  public long enqueue(NewWorkItem item) {
    Objects.requireNonNull(item, "item");
    long id = store.enqueue("enqueueing on queue '" + item.queue() + "'", item, clock);
    store.signalItems();
    return id;
  }

  /**
   * Enqueues several items in one transaction: all or none.
   *
   * @param items the items
   * @return their ids, in order
   * @throws StoreUnavailableException if the database cannot be reached
   */
  public List<Long> enqueueAll(List<NewWorkItem> items) {
    Objects.requireNonNull(items, "items");
    List<Long> ids = store.write("enqueueing " + items.size() + " items", c -> {
      Instant now = store.now(c, clock);
      for (NewWorkItem item : items) {
        Objects.requireNonNull(item, "item");
      }
      List<Long> inserted = sql.inserts().insertAll(c, items, now);
      store.notifyItems(c);
      return inserted;
    });
    store.signalItems();
    return ids;
  }

  /**
   * Enqueues one item on the caller's connection, inside the caller's transaction, so that it
   * commits or rolls back with the caller's own writes. Never commits, rolls back or closes the
   * connection. The connection must reach the store's database (and schema). On SQLite, begin
   * the caller's transaction with {@code BEGIN IMMEDIATE} so that it never has to upgrade a read
   * lock (which can fail with SQLITE_BUSY).
   *
   * @param connection the caller's connection
   * @param item the item
   * @return the item id (visible to others once the caller commits)
   * @throws TetherStoreException on a database error (the caller's transaction is then theirs to
   *     roll back)
   */
  public long enqueue(Connection connection, NewWorkItem item) {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(item, "item");
    try {
      return sql.inserts().insert(connection, item, store.now(connection, clock));
    } catch (SQLException e) {
      throw store.translate("enqueueing on queue '" + item.queue() + "' in the caller's transaction", e);
    }
  }

  // ------------------------------------------------------------------ acquire

  /**
   * Acquires the highest-priority, oldest available item of {@code queue}, if any.
   *
   * @param queue the queue
   * @param leaseDuration how long the lease lasts unless renewed (0 to 12 h)
   * @return the lease, or empty if nothing is available
   * @throws IllegalArgumentException if the duration is out of range
   * @throws StoreUnavailableException if the database cannot be reached
   */
  public Optional<Lease> acquire(String queue, Duration leaseDuration) {
    List<Lease> leases = acquire(AcquireRequest.one(queue, leaseDuration));
    return leases.isEmpty() ? Optional.empty() : Optional.of(leases.get(0));
  }

  /**
   * Acquires up to {@code request.maxItems()} available items: pending items that are due, and
   * items whose lease expired (each counted as a new delivery, or failed past its attempts),
   * highest priority first, then oldest. Never blocks on rows other workers are picking.
   *
   * @param request what to acquire
   * @return the leases, possibly empty
   * @throws StoreUnavailableException if the database cannot be reached
   */
  public List<Lease> acquire(AcquireRequest request) {
    Objects.requireNonNull(request, "request");
    return store.acquire("acquiring from queue '" + request.queue() + "'", request, workerId, clock);
  }

  /**
   * How often a waiting {@link #acquire(AcquireRequest, Duration)} looks again without a wake-up:
   * on PostgreSQL with notifications on (enqueues of every process wake it) this only finds
   * delayed items coming due and expired leases; on SQLite it also finds other processes'
   * enqueues.
   *
   * @param store the store
   * @return 1 s on PostgreSQL with notifications, else 200 ms
   */
  static Duration waitPollInterval(TetherStore store) {
    return store.usesNotifications() ? JdbcMailbox.DEFAULT_NOTIFIED_POLL_INTERVAL : Duration.ofMillis(200);
  }

  /** Longest wait of {@link #acquire(AcquireRequest, Duration)}. */
  public static final Duration MAX_WAIT_TIME = Duration.ofMinutes(1);

  /**
   * Acquires like {@link #acquire(AcquireRequest)}, waiting up to {@code waitTime} for items when
   * none is available (a long poll): an enqueue in this process, or on PostgreSQL (notifications
   * on, the default) an enqueue of any process, wakes it at once; delayed items coming due and
   * expired leases are found within {@link #waitPollInterval 200 ms (1 s on PostgreSQL)}.
   * Returns empty when the time is up or the calling thread is interrupted (the interrupt flag
   * stays set), so a worker's shutdown can interrupt a waiting thread.
   *
   * @param request what to acquire
   * @param waitTime how long to wait for items, 0 to {@link #MAX_WAIT_TIME}
   * @return the leases, possibly empty
   * @throws IllegalArgumentException if {@code waitTime} is negative or over the maximum
   * @throws StoreUnavailableException if the database cannot be reached
   */
  public List<Lease> acquire(AcquireRequest request, Duration waitTime) {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(waitTime, "waitTime");
    if (waitTime.isNegative() || waitTime.compareTo(MAX_WAIT_TIME) > 0) {
      throw new IllegalArgumentException(
          "waitTime must be between 0 and " + MAX_WAIT_TIME + ", was " + waitTime);
    }
    return AcquireWait.acquire(
        store, () -> acquire(request), waitTime, waitPollInterval(store), () -> false);
  }

  // ------------------------------------------------------------------ lease operations

  /**
   * Renews a lease (a heartbeat): the new expiry is {@code max(current expiry, now +
   * leaseDuration)}, so a renewal never shortens a lease.
   *
   * @param itemId the item
   * @param token the lease token
   * @param leaseDuration the extension (0 to 12 h)
   * @return the new expiry
   * @throws LeaseConflictException if another lease holds the item
   * @throws LeaseExpiredException if the lease expired and the item was reclaimed or deleted
   * @throws ItemFinalizedException if this lease already finalized the item
   * @throws StoreUnavailableException if the database cannot be reached
   */
  public Instant renew(long itemId, long token, Duration leaseDuration) {
    Objects.requireNonNull(leaseDuration, "leaseDuration");
    if (leaseDuration.isNegative() || leaseDuration.compareTo(AcquireRequest.MAX_LEASE) > 0) {
      throw new IllegalArgumentException(
          "leaseDuration must be in 0.." + AcquireRequest.MAX_LEASE + ", was " + leaseDuration);
    }
    return store.renew(itemId, token, leaseDuration, clock);
  }

  /**
   * Completes a leased item with its output.
   *
   * @param itemId the item
   * @param token the lease token
   * @param output the output bytes, or null; at most {@link NewWorkItem#MAX_DATA_BYTES}
   * @throws IllegalArgumentException if the output is too large (nothing is written)
   * @throws LeaseConflictException if another lease holds the item
   * @throws LeaseExpiredException if the lease expired and the item was reclaimed or deleted
   * @throws ItemFinalizedException if this lease already finalized the item
   */
  public void complete(long itemId, long token, byte[] output) {
    if (output != null) {
      NewWorkItem.checkSize(output, "output of item " + itemId);
    }
    store.complete(itemId, token, output, clock);
  }

  /**
   * Releases a lease: on success the item is {@code completed}
   * with {@code output}; on failure it is {@code pending} again after a doubling backoff while
   * deliveries remain, else {@code failed} with {@code error}. A failure leaves a {@code
   * released_failed} checkpoint.
   *
   * @param itemId the item
   * @param token the lease token
   * @param success whether the work succeeded
   * @param output the output text (UTF-8) when successful, or null; at most {@link
   *     NewWorkItem#MAX_DATA_BYTES} encoded
   * @param error the error when failed, or null
   * @return what happened to the item
   * @throws IllegalArgumentException if the output is too large (nothing is written)
   * @throws LeaseConflictException if another lease holds the item
   * @throws LeaseExpiredException if the lease expired and the item was reclaimed or deleted
   * @throws ItemFinalizedException if this lease already finalized the item
   */
  public ReleaseOutcome release(long itemId, long token, boolean success, String output, String error) {
    if (success) {
      complete(itemId, token, output == null ? null : output.getBytes(StandardCharsets.UTF_8));
      return ReleaseOutcome.COMPLETED;
    }
    return store.write("releasing item " + itemId + " as failed",
        c -> sql.leases().fail(c, itemId, token, error, store.now(c, clock), config::backoff));
  }

  /**
   * Hands a leased item back without counting a failure (graceful shutdown, or "not now"): it is
   * {@code pending} again after {@code delay} (zero: at once), the token becomes stale, and a
   * {@code nacked} checkpoint is written. The next acquisition still counts as a delivery.
   *
   * @param itemId the item
   * @param token the lease token
   * @param delay 0 to 12 h
   * @throws LeaseConflictException if another lease holds the item
   * @throws LeaseExpiredException if the lease expired and the item was reclaimed or deleted
   * @throws ItemFinalizedException if this lease already finalized the item
   */
  public void handBack(long itemId, long token, Duration delay) {
    Objects.requireNonNull(delay, "delay");
    if (delay.isNegative() || delay.compareTo(AcquireRequest.MAX_LEASE) > 0) {
      throw new IllegalArgumentException(
          "delay must be in 0.." + AcquireRequest.MAX_LEASE + ", was " + delay);
    }
    store.write("handing back item " + itemId, c -> {
      sql.leases().nack(c, itemId, token, delay, store.now(c, clock));
      store.notifyItems(c);
      return null;
    });
    store.signalItems();
  }

  // ------------------------------------------------------------------ dead letters

  /** Additional deliveries a redrive grants unless told otherwise: {@value}. */
  public static final int DEFAULT_REDRIVE_ATTEMPTS = 1;

  /**
   * Requeues one {@code failed} item (redrive) with {@value #DEFAULT_REDRIVE_ATTEMPTS} more
   * delivery; see {@link #redrive(long, int)}.
   *
   * @param itemId the item
   * @return true if the item was failed and is now pending; false otherwise
   */
  public boolean redrive(long itemId) {
    return redrive(itemId, DEFAULT_REDRIVE_ATTEMPTS);
  }

  /**
   * Requeues one {@code failed} item (redrive): it becomes pending at once, its delivery count is
   * kept (it never decreases) and its {@code max_attempts} becomes {@code deliveryCount +
   * additionalAttempts}; a {@code redriven} checkpoint is written and earlier checkpoints stay.
   *
   * @param itemId the item
   * @param additionalAttempts deliveries granted, at least 1
   * @return true if the item was failed and is now pending; false otherwise
   * @throws IllegalArgumentException if {@code additionalAttempts < 1}
   */
  public boolean redrive(long itemId, int additionalAttempts) {
    requireAttempts(additionalAttempts);
    boolean done = store.write("redriving item " + itemId,
        c -> {
          boolean redriven = sql.operatorActions().redrive(c, itemId, additionalAttempts, store.now(c, clock));
          if (redriven) {
            store.notifyItems(c);
          }
          return redriven;
        });
    if (done) {
      store.signalItems();
    }
    return done;
  }

  /**
   * Requeues every {@code failed} item of {@code queue} in one transaction, each with {@value
   * #DEFAULT_REDRIVE_ATTEMPTS} more delivery.
   *
   * @param queue the queue
   * @return how many were requeued
   */
  public int redriveAll(String queue) {
    return redriveAll(queue, DEFAULT_REDRIVE_ATTEMPTS);
  }

  /**
   * Requeues every {@code failed} item of {@code queue} in one transaction (see {@link
   * #redrive(long, int)}).
   *
   * @param queue the queue
   * @param additionalAttempts deliveries granted to each, at least 1
   * @return how many were requeued
   * @throws IllegalArgumentException if {@code additionalAttempts < 1} or the queue name breaks
   *     the {@link QueueName} rule
   */
  public int redriveAll(String queue, int additionalAttempts) {
    QueueName.requireValid(queue, "queue");
    requireAttempts(additionalAttempts);
    int n = store.write("redriving the failed items of queue '" + queue + "'", c -> {
      Instant now = store.now(c, clock);
      int count = 0;
      for (long id : sql.reads().failedIds(c, queue)) {
        if (sql.operatorActions().redrive(c, id, additionalAttempts, now)) {
          count++;
        }
      }
      if (count > 0) {
        store.notifyItems(c);
      }
      return count;
    });
    if (n > 0) {
      store.signalItems();
    }
    return n;
  }

  private static void requireAttempts(int additionalAttempts) {
    if (additionalAttempts < 1) {
      throw new IllegalArgumentException(
          "additionalAttempts must be >= 1, was " + additionalAttempts);
    }
  }

  /**
   * Returns an item with its checkpoints.
   *
   * @param itemId the item
   * @return the item, or empty if unknown
   */
  public Optional<WorkItem> find(long itemId) {
    return store.read("reading item " + itemId, c -> sql.reads().find(c, itemId, true));
  }
}
