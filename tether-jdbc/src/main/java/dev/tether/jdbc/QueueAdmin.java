package dev.tether.jdbc;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Operator actions on a store that are not tied to any lease: cancelling an item whoever holds it,
 * and purging old completed items. (Requeueing failed items is {@link LeaseManager#redrive}.)
 *
 * <p><b>Cancel is fencing.</b> {@link #cancel} finalizes a pending or in-progress item to {@code
 * cancelled} and clears its lease token in one transaction, so a worker that still runs the item
 * is refused on its next renew, complete or release ({@link ItemCancelledException}, a {@link
 * LeaseLostException}) and can never complete it afterwards.
 *
 * <p><b>Time.</b> Instants come from the given clock, else the store's, else the database clock
 * (PostgreSQL {@code clock_timestamp()}) or the system clock (SQLite), never from the caller's
 * machine unless the caller passes an instant.
 *
 * <p>Thread-safe; every method blocks for one short write transaction. Database failures throw
 * {@link StoreUnavailableException} (transient; nothing was changed) or {@link
 * TetherStoreException}.
 */
public final class QueueAdmin {
  private static final Logger LOG = LoggerFactory.getLogger(QueueAdmin.class);

  private final TetherStore store;
  private final Clock clock;

  /**
   * Creates an admin using the store's clock.
   *
   * @param store the store
   * @throws NullPointerException if {@code store} is null
   */
  public QueueAdmin(TetherStore store) {
    this(store, null);
  }

  /**
   * Creates an admin.
   *
   * @param store the store
   * @param clock the clock that stamps cancellations and decides purge cutoffs, or null for the
   *     store's
   * @throws NullPointerException if {@code store} is null
   */
  public QueueAdmin(TetherStore store, Clock clock) {
    this.store = Objects.requireNonNull(store, "store");
    this.clock = store.effectiveClock(clock);
  }

  /**
   * Cancels a {@code pending} or {@code in_progress} item, whatever lease holds it: the item
   * becomes {@code cancelled} with {@code reason} as its error, its lease token is cleared (a holder's
   * later renew, complete, release or hand-back throws {@link ItemCancelledException} and changes
   * nothing), and a {@link Checkpoint#CANCELLED} checkpoint records the holder, token, delivery
   * and reason. A cancelled item can be requeued with {@link LeaseManager#redrive}.
   *
   * @param itemId the item
   * @param reason why, recorded as the item's error and the checkpoint's reason; not blank
   * @return true if the item was pending or in progress and is now cancelled; false (nothing
   *     changed) if it is unknown or already finished ({@code completed}, {@code failed} or
   *     {@code cancelled})
   * @throws NullPointerException if {@code reason} is null
   * @throws IllegalArgumentException if {@code reason} is blank
   * @throws StoreUnavailableException if the database cannot be reached
   * @throws TetherStoreException on another database error
   */
  public boolean cancel(long itemId, String reason) {
    Objects.requireNonNull(reason, "reason");
    if (reason.isBlank()) {
      throw new IllegalArgumentException("reason must not be blank: say why item " + itemId + " is cancelled");
    }
    boolean done = store.write("cancelling item " + itemId,
        c -> store.sql().operatorActions().cancel(c, itemId, reason, store.now(c, clock)));
    if (done) {
      LOG.info("Cancelled work item {}: {}", itemId, reason);
    }
    return done;
  }

  /**
   * Deletes the {@code completed} items that completed strictly before {@code completedBefore},
   * with their checkpoints, in one transaction. {@code failed} items are kept (they are for
   * inspection and redrive; {@link RecoverySweep} retention removes old ones).
   *
   * @param completedBefore the cutoff instant
   * @return how many items were deleted
   * @throws NullPointerException if {@code completedBefore} is null
   * @throws StoreUnavailableException if the database cannot be reached
   * @throws TetherStoreException on another database error
   */
  public int purgeCompleted(Instant completedBefore) {
    Objects.requireNonNull(completedBefore, "completedBefore");
    int n = store.write("purging the items completed before " + completedBefore,
        c -> store.sql().purges().purgeCompleted(c, completedBefore));
    if (n > 0) {
      LOG.info("Purged {} items completed before {}", n, completedBefore);
    }
    return n;
  }

  /**
   * Deletes the {@code completed} items that completed at least {@code age} ago by the store's
   * clock (so {@link Duration#ZERO} deletes every completed item), with their checkpoints, in one
   * transaction. {@code failed} items are kept.
   *
   * @param age the minimum age since completion; not negative
   * @return how many items were deleted
   * @throws NullPointerException if {@code age} is null
   * @throws IllegalArgumentException if {@code age} is negative
   * @throws StoreUnavailableException if the database cannot be reached
   * @throws TetherStoreException on another database error
   */
  public int purgeCompletedOlderThan(Duration age) {
    Objects.requireNonNull(age, "age");
    if (age.isNegative()) {
      throw new IllegalArgumentException("age must not be negative, was " + age);
    }
    int n = store.write("purging the items completed at least " + age + " ago", c -> {
      // completed_at <= now - age, at the stored millisecond resolution
      Instant cutoff = store.now(c, clock).minus(age).plusMillis(1);
      return store.sql().purges().purgeCompleted(c, cutoff);
    });
    if (n > 0) {
      LOG.info("Purged {} items completed at least {} ago", n, age);
    }
    return n;
  }
}
