package dev.tether.jdbc;

import dev.tether.Ticker;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * Batches lease renewals: renewals that are due together share one transaction and, on
 * PostgreSQL, one statement ({@link StoreEngine#writeRenewals}). One batch commits at a time and
 * batches start at most every {@link #MIN_GAP} apart, so a steady stream of renewals (many leases
 * extended once a second) costs at most {@code 1 s / MIN_GAP} transactions per second whatever the
 * number of leases; an isolated renewal waits for nothing. Each renewal is conditional on (id,
 * token, status) and refused on its own; a caller returns after its renewal committed, with its
 * new expiry. Every renewal of a store with group commit on comes here: a {@code LeaseExtender}'s
 * on beats and {@link HeartbeatThread}'s on its timer alike.
 *
 * <p>On {@link CallerLedGroups} (one batch in flight, the leader pausing for the gap before it
 * takes the next). No thread of its own: the leader is one of the callers. Thread-safe.
 */
final class RenewalBatcher {

  /** Least time between the starts of two batches. */
  static final Duration MIN_GAP = Duration.ofMillis(20);

  /** Largest number of renewals in one batch. */
  static final int MAX_BATCH = 1000;

  private final TetherStore store;
  private final LeaseBatches batches;
  private final CallerLedGroups<Op> groups =
      new CallerLedGroups<>(1, 1, MAX_BATCH, op -> 0, 1, this::runBatch, this::pauseForGap);
  /** Batches committed or failed (tests). */
  private final LongAdder batchesRun = new LongAdder();
  /** What the gap is measured with ({@link System#nanoTime()}; tests set their own). */
  private volatile Ticker ticker = System::nanoTime;
  /** How the leader waits for the gap ({@link TimeUnit#sleep}; tests set their own). */
  private volatile Sleeper sleeper = TimeUnit.NANOSECONDS::sleep;
  /**
   * When the last batch started; read and written by the leader (one at a time; the next leader
   * sees it through {@link CallerLedGroups}' leading count), and by {@link #pacing} before any
   * renewal.
   */
  private long lastStart = ticker.read() - MIN_GAP.toNanos();

  /** Waits a number of nanoseconds; an interrupt ends the wait. */
  @FunctionalInterface
  interface Sleeper {
    void sleep(long nanos) throws InterruptedException;
  }

  RenewalBatcher(TetherStore store, LeaseBatches batches) {
    this.store = store;
    this.batches = batches;
  }

  /**
   * Measures the gap with {@code ticker} and waits for it with {@code sleeper} from now on, as if
   * the last batch started a gap ago (tests; call while no renewal is under way).
   */
  void pacing(Ticker ticker, Sleeper sleeper) {
    this.ticker = ticker;
    this.sleeper = sleeper;
    this.lastStart = ticker.read() - MIN_GAP.toNanos();
  }

  /** One renewal waiting for its batch; {@code result} and {@code error} are written before it is done. */
  static final class Op extends CallerLedGroups.Member {
    final long id;
    final long token;
    final Duration duration;
    final Clock clock;
    final dev.tether.mailbox.OutputTail output;
    volatile Instant result;
    volatile RuntimeException error;

    Op(long id, long token, Duration duration, Clock clock, dev.tether.mailbox.OutputTail output) {
      this.id = id;
      this.token = token;
      this.duration = duration;
      this.clock = clock;
      this.output = output;
    }
  }

  /**
   * Renews one lease to {@code max(current expiry, now + duration)}, sharing a batch with
   * renewals due at the same time, with the delivery's latest output when given (one more batched
   * statement in the same transaction). Blocks until committed.
   *
   * @return the new expiry
   * @throws LeaseConflictException if another lease holds the item
   * @throws LeaseExpiredException if the lease is no longer held
   * @throws ItemFinalizedException if this lease already finalized the item
   * @throws StoreUnavailableException if the database cannot be reached (nothing applied)
   */
  Instant renew(long id, long token, Duration duration, Clock clock,
      dev.tether.mailbox.OutputTail output) {
    Op mine = new Op(id, token, duration, clock, output);
    groups.run(List.of(mine));
    if (mine.error != null) {
      throw mine.error;
    }
    return mine.result;
  }

  /**
   * Before a batch: waits until {@link #MIN_GAP} after the last batch start (renewals arriving
   * meanwhile join it); an interrupt ends the wait early, with the status set.
   */
  private void pauseForGap() {
    long wait = lastStart + MIN_GAP.toNanos() - ticker.read();
    if (wait > 0) {
      try {
        sleeper.sleep(wait);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    lastStart = ticker.read();
  }

  /** About how many renewals wait for a batch (tests). */
  int queued() {
    return groups.queued();
  }

  /** Batches run so far (tests). */
  long batchesRun() {
    return batchesRun.sum();
  }

  /** Commits one batch of renewals (leader; {@link CallerLedGroups}). */
  private void runBatch(List<Op> batch) {
    batchesRun.increment();
    batch.sort((a, b) -> Long.compare(a.id, b.id));
    try {
      String what = batch.size() == 1 ? "renewing the lease of item " + batch.get(0).id
          : "renewing " + batch.size() + " leases";
      SqlWork<List<LeaseBatches.Renewed>> work = c -> {
        List<LeaseBatches.Renewal> renewals = new ArrayList<>(batch.size());
        Instant unclocked = null;
        boolean unclockedRead = false;
        for (Op x : batch) {
          Instant now;
          if (x.clock != null) {
            now = store.now(c, x.clock);
          } else {
            if (!unclockedRead) {
              unclocked = store.storeEngine().statementInstant(c); // null: the statement reads the clock
              unclockedRead = true;
            }
            now = unclocked;
          }
          renewals.add(new LeaseBatches.Renewal(x.id, x.token, x.duration, now, x.output));
        }
        return batches.renewAll(c, renewals);
      };
      List<LeaseBatches.Renewed> outcomes = store.storeEngine().writeRenewals(store, what, work);
      for (int i = 0; i < batch.size(); i++) {
        LeaseBatches.Renewed r = outcomes.get(i);
        batch.get(i).result = r.expiry();
        batch.get(i).error = r.refusal();
      }
    } catch (RuntimeException e) {
      for (Op x : batch) {
        x.error = e;
      }
    } catch (Error e) {
      // No renewal may pass for applied (a null error) with a null expiry; the leader gets the Error.
      for (Op x : batch) {
        x.error = new IllegalStateException("the batch renewing the lease of item " + x.id
            + " ended without an outcome; it may or may not have been renewed");
      }
      throw e;
    }
  }
}
