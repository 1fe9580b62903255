package dev.tether.jdbc;

import dev.tether.QueueName;
import dev.tether.mailbox.LeaseStatus;
import dev.tether.mailbox.MailboxFullException;
import dev.tether.mailbox.OutputTail;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Enqueues, leases, renews and releases work items for one worker.
 *
 * <p><b>Fencing.</b> Every acquisition gets a new unguessable token; {@link #renew}, {@link
 * #release} and {@link #complete} name it and are conditional updates on (id, token, state). A
 * token stays valid until the item is leased again or finalized; once another worker took the
 * item over, the old token is refused with {@link LeaseConflictException}, and once the item was
 * reclaimed, handed back or deleted with {@link LeaseExpiredException}, once it was cancelled
 * with {@link ItemCancelledException}; either way nothing changes.
 *
 * <p><b>One budget.</b> Every delivery is counted ({@code delivery_count}); a delivery is also
 * charged against the item's budget ({@code attempts} against {@code max_attempts}) unless its
 * worker hands it back ({@link #handBack}). Expiry is redelivery: {@link #acquire} also takes
 * items whose lease expired, each such expiry recorded once (a {@code lease_expired} checkpoint);
 * an item whose expired delivery was its last charged attempt is marked {@code failed} instead of
 * being delivered again — the same outcome {@link RecoverySweep} reaches for the same item. A
 * failed or nacked last attempt fails the item too. An item sent with a reply-to queue that ends
 * {@code failed} or {@code cancelled} sends its requester an error reply in the same
 * transaction.
 *
 * <p><b>Time.</b> Instants and expiry come from the configured clock, else the store's, else the
 * database clock (PostgreSQL {@code clock_timestamp()}) or the system clock (SQLite).
 *
 * <p>Thread-safe; every method blocks for one short transaction. Database failures throw {@link
 * StoreUnavailableException} (transient) or {@link TetherStoreException}.
 */
public final class LeaseManager {
  private static final Logger LOG = LoggerFactory.getLogger(LeaseManager.class);

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
      store.notifyItems(c, oneQueue(items), items.size());
      return inserted;
    });
    store.signalItems();
    return ids;
  }

  /** The queue of every item, or null when they are of several. */
  private static String oneQueue(List<NewWorkItem> items) {
    String queue = items.isEmpty() ? null : items.get(0).queue();
    for (NewWorkItem item : items) {
      if (!item.queue().equals(queue)) {
        return null;
      }
    }
    return queue;
  }

  /**
   * Enqueues one item on the caller's connection, inside the caller's transaction, so that it
   * commits or rolls back with the caller's own writes. Never commits, rolls back or closes the
   * connection. The connection must reach the store's database; when the store was given a
   * schema on a caller's data source, the connection is switched to it for the insert and back.
   * On PostgreSQL, other processes' waiting receivers are notified when the transaction commits
   * (nothing when it rolls back); call {@link #wakeReceivers()} after the commit to wake this
   * process's own at once (else they find the item at their next poll). On SQLite, begin the
   * caller's transaction with {@code BEGIN IMMEDIATE} so that it never has to upgrade a read
   * lock (which can fail with SQLITE_BUSY).
   *
   * @param connection the caller's connection
   * @param item the item
   * @return the item id (visible to others once the caller commits)
   * @throws TetherStoreException on a database error (the caller's transaction is then theirs to
   *     roll back)
   */
  public long enqueue(Connection connection, NewWorkItem item) {
    return enqueueOn(connection, item, 0);
  }

  /**
   * Wakes the waiting receivers of this process: call it after committing a transaction that
   * enqueued with {@link #enqueue(Connection, NewWorkItem)}. Never blocks.
   */
  public void wakeReceivers() {
    store.signalItems();
  }

  /** Enqueues on the caller's connection unless the queue is at {@code capacity} (0: unbounded). */
  long enqueueOn(Connection connection, NewWorkItem item, int capacity) {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(item, "item");
    try {
      return store.onCallerConnection(connection, c -> {
        if (capacity > 0) {
          checkCapacity(c, item.queue(), capacity, "mailbox");
        }
        long id = sql.inserts().insert(c, item, store.now(c, clock));
        store.notifyItems(c, item.queue(), 1);
        return id;
      });
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
    List<Lease> leases =
        store.acquire("acquiring from queue '" + request.queue() + "'", request, workerId, clock);
    for (Lease lease : leases) {
      if (lease.progress() != null) {
        recordTakeover(lease);
      }
    }
    return leases;
  }

  /**
   * Records in the audit trail that a delivery starts from the progress checkpoint of an earlier
   * one. Runs after the acquisition (only for items with a checkpoint, so the acquisition itself
   * stays one statement); a failure is logged, never thrown, because the lease is already taken.
   */
  private void recordTakeover(Lease lease) {
    try {
      store.write("recording the progress taken over by item " + lease.itemId(), c ->
          sql.leases().recordTakeover(c, lease.itemId(), lease.token(), store.now(c, clock)));
    } catch (RuntimeException e) {
      LOG.warn("Could not record that delivery {} of item {} takes over its progress checkpoint"
          + " (the audit trail misses this entry; the work goes on): {}", lease.deliveryCount(),
          lease.itemId(), e.toString());
    }
  }

  /** Longest wait of {@link #acquire(AcquireRequest, Duration)}. */
  public static final Duration MAX_WAIT_TIME = Duration.ofMinutes(1);

  /**
   * Acquires like {@link #acquire(AcquireRequest)}, waiting up to {@code waitTime} for items when
   * none is available (a long poll): an enqueue in this process, or on PostgreSQL (notifications
   * on, the default) an enqueue of any process, wakes it at once; delayed items coming due,
   * expired leases and (on SQLite) other processes' enqueues are found within the store's {@link
   * TetherStore#defaultPollInterval() poll interval}. Returns empty when the time is up or the
   * calling thread is interrupted (the interrupt flag stays set), so a worker's shutdown can
   * interrupt a waiting thread.
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
    return acquire(request, waitTime, store.defaultPollInterval(), () -> false);
  }

  /**
   * The long poll of {@link #acquire(AcquireRequest, Duration)} with a poll interval and a stop
   * condition of the caller's (a mailbox's {@code close()}), checked at every wake-up.
   */
  List<Lease> acquire(AcquireRequest request, Duration waitTime, Duration pollInterval,
      BooleanSupplier stop) {
    return AcquireWait.acquire(
        store, request, () -> acquire(request), prober(request.queue()), clock == null, waitTime, pollInterval, stop);
  }

  /** Whether this component's time is the database's or the system's (no clock of its own). */
  boolean onRealClock() {
    return clock == null;
  }

  /**
   * The read-only look at {@code queue} for a waiting receiver ({@link StoreEngine#probe}), or
   * null where the engine has none.
   */
  java.util.function.Supplier<QueueProbe> prober(String queue) {
    // (on a clock of this component's, probes still say what is ready; due times are ignored)
    return store.engine() == TetherStore.Engine.SQLITE ? null : () -> store.probe(queue, clock);
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
    return renew(itemId, token, leaseDuration, null);
  }

  /**
   * Renews a lease as {@link #renew(long, long, Duration)} does, and in the same transaction
   * writes the delivery's latest output (its tails replace the previous ones on the item's row;
   * the instants of its last output and last beat are the store's clock less their ages), which
   * the checkpoint ending the delivery keeps, whatever ends it. Costs one more statement in the
   * renewal's transaction and at most twice {@link OutputTail#MAX_CHARS} characters.
   *
   * @param itemId the item
   * @param token the lease token
   * @param leaseDuration the extension (0 to 12 h)
   * @param output the latest output, or null for none
   * @return the new expiry
   * @throws LeaseConflictException if another lease holds the item
   * @throws LeaseExpiredException if the lease expired and the item was reclaimed or deleted
   * @throws ItemFinalizedException if this lease already finalized the item
   * @throws StoreUnavailableException if the database cannot be reached
   */
  public Instant renew(long itemId, long token, Duration leaseDuration, OutputTail output) {
    Objects.requireNonNull(leaseDuration, "leaseDuration");
    if (leaseDuration.isNegative() || leaseDuration.compareTo(AcquireRequest.MAX_LEASE) > 0) {
      throw new IllegalArgumentException(
          "leaseDuration must be in 0.." + AcquireRequest.MAX_LEASE + ", was " + leaseDuration);
    }
    return store.renew(itemId, token, leaseDuration, clock, output);
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
   * Releases a lease: on success the item is {@code completed} with {@code output}; on failure
   * the attempt is charged, and the item is {@code pending} again after a doubling backoff while
   * attempts remain, else {@code failed} with {@code error} (and its requester, if any, gets an
   * error reply). A failure leaves a {@code released_failed} checkpoint.
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
   * @throws ItemCancelledException if the item was cancelled
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
   * Ends a lease's attempt as failed (charged) with a delay of the caller's choosing: the item is
   * {@code pending} again after {@code delay}, or, when this was its last attempt, {@code failed}
   * with {@code reason} (and its requester, if any, gets an error reply).
   *
   * @param itemId the item
   * @param token the lease token
   * @param delay 0 to 12 h
   * @param reason why the attempt failed, kept as the item's error, or null
   * @return {@link ReleaseOutcome#RETRY_SCHEDULED} or {@link ReleaseOutcome#FAILED}
   * @throws IllegalArgumentException if the delay is out of range
   * @throws LeaseConflictException if another lease holds the item
   * @throws LeaseExpiredException if the lease expired and the item was reclaimed or deleted
   * @throws ItemCancelledException if the item was cancelled
   * @throws ItemFinalizedException if this lease already finalized the item
   */
  public ReleaseOutcome nack(long itemId, long token, Duration delay, String reason) {
    return nack(itemId, token, delay, reason, null);
  }

  /**
   * Ends a lease's attempt as {@link #nack(long, long, Duration, String)} does, keeping the
   * delivery's final output with its checkpoint.
   *
   * @param itemId the item
   * @param token the lease token
   * @param delay 0 to 12 h
   * @param reason why the attempt failed, kept as the item's error, or null
   * @param output the delivery's final output, or null (then its last renewal's is kept)
   * @return {@link ReleaseOutcome#RETRY_SCHEDULED} or {@link ReleaseOutcome#FAILED}
   * @throws IllegalArgumentException if the delay is out of range
   * @throws LeaseConflictException if another lease holds the item
   * @throws LeaseExpiredException if the lease expired and the item was reclaimed or deleted
   * @throws ItemCancelledException if the item was cancelled
   * @throws ItemFinalizedException if this lease already finalized the item
   */
  public ReleaseOutcome nack(long itemId, long token, Duration delay, String reason, OutputTail output) {
    checkDelay(delay);
    ReleaseOutcome outcome = store.write("nacking item " + itemId, c -> {
      recordOutput(c, itemId, token, output);
      LeaseOperations.Nacked o = sql.leases().nack(c, itemId, token, delay, reason, store.now(c, clock));
      if (o.outcome() == ReleaseOutcome.RETRY_SCHEDULED) {
        store.notifyItems(c, o.queue(), 1);
      }
      return o.outcome();
    });
    store.signalItems();
    return outcome;
  }

  /**
   * Hands a leased item back without charging its attempt (its worker is shutting down or
   * draining, or is otherwise unable to start it): it is {@code pending} again after {@code
   * delay} (zero: at once), keeps its progress checkpoint, the token becomes stale, and a {@code
   * handed_back} checkpoint is written. The next acquisition counts as a delivery, not as an
   * attempt.
   *
   * @param itemId the item
   * @param token the lease token
   * @param delay 0 to 12 h
   * @throws IllegalArgumentException if the delay is out of range
   * @throws LeaseConflictException if another lease holds the item
   * @throws LeaseExpiredException if the lease expired and the item was reclaimed or deleted
   * @throws ItemCancelledException if the item was cancelled
   * @throws ItemFinalizedException if this lease already finalized the item
   */
  public void handBack(long itemId, long token, Duration delay) {
    handBack(itemId, token, delay, null);
  }

  /**
   * Hands a leased item back as {@link #handBack(long, long, Duration)} does, keeping the
   * delivery's final output with its checkpoint.
   *
   * @param itemId the item
   * @param token the lease token
   * @param delay 0 to 12 h
   * @param output the delivery's final output, or null (then its last renewal's is kept)
   * @throws IllegalArgumentException if the delay is out of range
   * @throws LeaseConflictException if another lease holds the item
   * @throws LeaseExpiredException if the lease expired and the item was reclaimed or deleted
   * @throws ItemCancelledException if the item was cancelled
   * @throws ItemFinalizedException if this lease already finalized the item
   */
  public void handBack(long itemId, long token, Duration delay, OutputTail output) {
    checkDelay(delay);
    store.write("handing back item " + itemId, c -> {
      recordOutput(c, itemId, token, output);
      String queue = sql.leases().handBack(c, itemId, token, delay, store.now(c, clock));
      store.notifyItems(c, queue, 1);
      return null;
    });
    store.signalItems();
  }

  /**
   * Dead-letters a leased item at once (its attempt charged): {@code failed} with {@code
   * reason}, never delivered again unless redriven; its requester, if any, gets an error reply.
   *
   * @param itemId the item
   * @param token the lease token
   * @param reason why, for operators, or null
   * @throws LeaseConflictException if another lease holds the item
   * @throws LeaseExpiredException if the lease expired and the item was reclaimed or deleted
   * @throws ItemCancelledException if the item was cancelled
   * @throws ItemFinalizedException if this lease already finalized the item
   */
  public void deadLetter(long itemId, long token, String reason) {
    deadLetter(itemId, token, reason, null);
  }

  /**
   * Dead-letters a leased item as {@link #deadLetter(long, long, String)} does, keeping the
   * delivery's final output with its checkpoint.
   *
   * @param itemId the item
   * @param token the lease token
   * @param reason why, for operators, or null
   * @param output the delivery's final output, or null (then its last renewal's is kept)
   * @throws LeaseConflictException if another lease holds the item
   * @throws LeaseExpiredException if the lease expired and the item was reclaimed or deleted
   * @throws ItemCancelledException if the item was cancelled
   * @throws ItemFinalizedException if this lease already finalized the item
   */
  public void deadLetter(long itemId, long token, String reason, OutputTail output) {
    store.write("dead-lettering item " + itemId, c -> {
      recordOutput(c, itemId, token, output);
      sql.leases().deadLetter(c, itemId, token, reason, store.now(c, clock));
      return null;
    });
  }

  /**
   * Records the progress checkpoint of a leased item, replacing the previous one: fenced by the
   * token and durable when this returns; the item's next delivery gets it ({@link
   * Lease#progress()}). Also counts as the lease's heartbeat and work beat ({@link #beat}), but
   * does not extend it.
   *
   * @param itemId the item
   * @param token the lease token
   * @param progress the checkpoint, at most {@link dev.tether.mailbox.Mailbox#MAX_CHECKPOINT_BYTES}
   * @throws IllegalArgumentException if the checkpoint is too large (nothing is written)
   * @throws LeaseConflictException if another lease holds the item
   * @throws LeaseExpiredException if the lease expired and the item was reclaimed or deleted
   * @throws ItemCancelledException if the item was cancelled
   * @throws ItemFinalizedException if this lease already finalized the item
   */
  public void checkpoint(long itemId, long token, byte[] progress) {
    Objects.requireNonNull(progress, "progress");
    if (progress.length > dev.tether.mailbox.Mailbox.MAX_CHECKPOINT_BYTES) {
      throw new IllegalArgumentException("checkpoint of item " + itemId + " is " + progress.length
          + " bytes, over the limit of " + dev.tether.mailbox.Mailbox.MAX_CHECKPOINT_BYTES
          + "; nothing was written: keep large state elsewhere and checkpoint a reference");
    }
    store.write("checkpointing item " + itemId, c -> {
      sql.leases().checkpoint(c, itemId, token, progress, store.now(c, clock));
      return null;
    });
  }

  /**
   * Asks the store whether a lease still holds, by the token and the store's clock (never this
   * process's): {@code HELD}, {@code EXPIRED} (its token still current, but any receiver may take
   * the item over), {@code LOST} (taken over, handed back, finalized or gone) or {@code
   * CANCELLED}. Reads one row; changes nothing.
   *
   * @param itemId the item
   * @param token the lease token
   * @return the status
   * @throws StoreUnavailableException if the database cannot be reached
   */
  public LeaseStatus checkLease(long itemId, long token) {
    return store.read("checking the lease of item " + itemId,
        c -> sql.leases().checkLease(c, itemId, token, store.now(c, clock)));
  }

  /**
   * Asks the store like {@link #checkLease} and also reads the last beat the lease's work
   * recorded through its token ({@link #beat}, {@link #checkpoint}), so that a holder can tell
   * that work it cannot see (a process it delegated the work to) is progressing. Reads one row;
   * changes nothing.
   *
   * @param itemId the item
   * @param token the lease token
   * @return the status and the last work beat
   * @throws StoreUnavailableException if the database cannot be reached
   */
  public LeaseCheck inspectLease(long itemId, long token) {
    return store.read("checking the lease of item " + itemId,
        c -> sql.leases().inspectLease(c, itemId, token, store.now(c, clock)));
  }

  /**
   * Records a beat of a leased item's work in the store, fenced by the token: its heartbeat and
   * its work beat ({@link LeaseCheck#workBeatAt()}) become now. Does not extend the lease: the
   * holder, which reads the work beat, extends it as for any other beat of its work. For work
   * done outside the holder's process (a command's own process, a service it delegated to).
   *
   * @param itemId the item
   * @param token the lease token
   * @throws LeaseConflictException if another lease holds the item
   * @throws LeaseExpiredException if the lease expired and the item was reclaimed or deleted
   * @throws ItemCancelledException if the item was cancelled
   * @throws ItemFinalizedException if this lease already finalized the item
   * @throws StoreUnavailableException if the database cannot be reached
   */
  public void beat(long itemId, long token) {
    store.write("recording a beat of item " + itemId, c -> {
      sql.leases().beat(c, itemId, token, store.now(c, clock));
      return null;
    });
  }

  /**
   * Completes a held item and inserts the reply to it into its reply-to queue, in one
   * transaction: both or neither, and neither through a stale token.
   */
  void completeWithReply(long itemId, long token, byte[] output, NewWorkItem reply, int replyCapacity) {
    store.write("replying to and acknowledging item " + itemId, c -> {
      Instant now = store.now(c, clock);
      sql.leases().complete(c, itemId, token, output, now);
      insertReply(c, reply, replyCapacity, now);
      return null;
    });
    store.signalItems();
  }

  /** Inserts a reply while the lease still holds, without finalizing the item. */
  void reply(long itemId, long token, NewWorkItem reply, int replyCapacity) {
    store.write("replying to item " + itemId, c -> {
      Instant now = store.now(c, clock);
      sql.leases().touchHeld(c, itemId, token, now);
      insertReply(c, reply, replyCapacity, now);
      return null;
    });
    store.signalItems();
  }

  private void insertReply(Connection c, NewWorkItem reply, int capacity, Instant now) throws SQLException {
    if (capacity > 0) {
      checkCapacity(c, reply.queue(), capacity, "reply mailbox");
    }
    sql.inserts().insert(c, reply, now);
    store.notifyItems(c, reply.queue(), 1);
  }

  /**
   * Enqueues one item unless its queue already holds {@code capacity} unfinished items (0:
   * unbounded); capacity checks of one queue are serialized.
   *
   * @throws MailboxFullException if the queue is at its capacity (nothing was written)
   */
  long enqueueWithin(NewWorkItem item, int capacity) {
    if (capacity == 0) {
      return enqueue(item);
    }
    long id = store.write("enqueueing on queue '" + item.queue() + "'", c -> {
      Instant now = store.now(c, clock);
      checkCapacity(c, item.queue(), capacity, "mailbox");
      long inserted = sql.inserts().insert(c, item, now);
      store.notifyItems(c, item.queue(), 1);
      return inserted;
    });
    store.signalItems();
    return id;
  }

  private void checkCapacity(Connection c, String queue, int capacity, String what) throws SQLException {
    store.storeEngine().lockQueue(c, queue);
    long count = sql.inserts().countUnfinished(c, queue);
    if (count >= capacity) {
      throw new MailboxFullException(what + " '" + queue + "' holds " + count
          + " unfinished messages, its capacity is " + capacity
          + "; nothing was sent: retry after messages are acknowledged, or raise the capacity");
    }
  }

  /** The clock deciding this manager's instants: its own, the store's, or null (the engine's). */
  Clock clock() {
    return clock;
  }

  /**
   * Queues a completion of a held item without waiting for it to be durable: it commits in the
   * store's next group commit (a receive's acquisition, another acknowledgement, or a {@link
   * GroupCommitter#flush}), fenced by the token like {@link #complete}. {@code onDone} is told the
   * outcome. For {@link JdbcMailbox.Builder#deferredAcknowledgements}.
   *
   * @throws IllegalArgumentException if the output is too large (nothing is queued)
   */
  GroupCommitter.Completion completeDeferred(
      long itemId, long token, byte[] output, java.util.function.Consumer<GroupCommitter.Completion> onDone) {
    if (output != null) {
      NewWorkItem.checkSize(output, "output of item " + itemId);
    }
    return store.committer().defer(itemId, token, output, clock, onDone);
  }

  /** Completes several leases in shared transactions; null or the refusal of each, in order. */
  List<RuntimeException> completeAll(List<LeaseKey> leases) {
    return store.completeAll(leases, clock);
  }

  private static void checkDelay(Duration delay) {
    Objects.requireNonNull(delay, "delay");
    if (delay.isNegative() || delay.compareTo(AcquireRequest.MAX_LEASE) > 0) {
      throw new IllegalArgumentException(
          "delay must be in 0.." + AcquireRequest.MAX_LEASE + ", was " + delay);
    }
  }

  // ------------------------------------------------------------------ dead letters

  /**
   * Requeues one {@code failed} or {@code cancelled} item (a redrive) with a fresh budget: it
   * becomes pending at once, its charged attempts start again from zero (its own {@code
   * max_attempts} of them), its delivery count is kept (it never decreases), as is its progress
   * checkpoint; a {@code redriven} checkpoint is written and earlier checkpoints stay.
   *
   * @param itemId the item
   * @return true if the item was failed or cancelled and is now pending; false otherwise
   */
  public boolean redrive(long itemId) {
    return redriveWith(itemId, null);
  }

  /**
   * Requeues one {@code failed} or {@code cancelled} item (see {@link #redrive(long)}) with a
   * budget of {@code maxAttempts} charged attempts, which becomes the item's {@code
   * max_attempts}.
   *
   * @param itemId the item
   * @param maxAttempts the new budget, at least 1
   * @return true if the item was failed or cancelled and is now pending; false otherwise
   * @throws IllegalArgumentException if {@code maxAttempts < 1}
   */
  public boolean redrive(long itemId, int maxAttempts) {
    return redriveWith(itemId, requireAttempts(maxAttempts));
  }

  private boolean redriveWith(long itemId, Integer maxAttempts) {
    boolean done = store.write("redriving item " + itemId,
        c -> {
          boolean redriven = sql.operatorActions().redrive(c, itemId, maxAttempts, store.now(c, clock));
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
   * Requeues every {@code failed} item of {@code queue} in one transaction, each with a fresh
   * budget of its own {@code max_attempts} (see {@link #redrive(long)}).
   *
   * @param queue the queue
   * @return how many were requeued
   * @throws IllegalArgumentException if the queue name breaks the {@link QueueName} rule
   */
  public int redriveAll(String queue) {
    return redriveAllWith(queue, null);
  }

  /**
   * Requeues every {@code failed} item of {@code queue} in one transaction, each with a budget of
   * {@code maxAttempts} (see {@link #redrive(long, int)}).
   *
   * @param queue the queue
   * @param maxAttempts the new budget of each, at least 1
   * @return how many were requeued
   * @throws IllegalArgumentException if {@code maxAttempts < 1} or the queue name breaks the
   *     {@link QueueName} rule
   */
  public int redriveAll(String queue, int maxAttempts) {
    return redriveAllWith(queue, requireAttempts(maxAttempts));
  }

  private int redriveAllWith(String queue, Integer maxAttempts) {
    QueueName.requireValid(queue, "queue");
    int n = store.write("redriving the failed items of queue '" + queue + "'", c -> {
      Instant now = store.now(c, clock);
      int count = 0;
      for (long id : sql.reads().failedIds(c, queue)) {
        if (sql.operatorActions().redrive(c, id, maxAttempts, now)) {
          count++;
        }
      }
      if (count > 0) {
        store.notifyItems(c, queue, count);
      }
      return count;
    });
    if (n > 0) {
      store.signalItems();
    }
    return n;
  }

  private static int requireAttempts(int maxAttempts) {
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts must be >= 1, was " + maxAttempts);
    }
    return maxAttempts;
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

  /**
   * Writes a held delivery's latest output without extending its lease (see {@link
   * #renew(long, long, Duration, OutputTail)} for what is written).
   *
   * @param itemId the item
   * @param token the lease token
   * @param output the latest output
   * @return whether the lease was held (else nothing changed)
   * @throws StoreUnavailableException if the database cannot be reached
   */
  public boolean recordOutput(long itemId, long token, OutputTail output) {
    Objects.requireNonNull(output, "output");
    return store.write("writing the output of item " + itemId,
        c -> sql.leases().recordOutput(c, itemId, token, output, store.now(c, clock)));
  }

  /** Writes a delivery's final output before the step that ends it (which checks the lease). */
  private void recordOutput(Connection c, long itemId, long token, OutputTail output)
      throws SQLException {
    if (output != null) {
      sql.leases().recordOutput(c, itemId, token, output, store.now(c, clock));
    }
  }
}
