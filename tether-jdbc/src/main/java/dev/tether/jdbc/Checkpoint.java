package dev.tether.jdbc;

import java.time.Instant;

/**
 * One entry of a work item's audit trail: how one delivery ended other than by success (lease
 * expired, released as failed, handed back, dead-lettered), an operator action (redriven,
 * cancelled), or a delivery that started from the progress checkpoint an earlier delivery wrote
 * (progress taken over). Not to be confused with a progress checkpoint ({@link
 * dev.tether.loop.WorkContext#checkpoint}), which records a handler's progress.
 *
 * @param id the checkpoint id
 * @param itemId the work item
 * @param kind {@code lease_expired}, {@code released_failed}, {@code handed_back},
 *     {@code dead_lettered}, {@code redriven}, {@code cancelled} or {@code progress_taken_over}
 *     ({@code nacked} in stores
 *     written before hand-backs were told apart from failures)
 * @param leaseHolder the worker that held the lease, or null
 * @param leaseToken the lease token, or null
 * @param deliveryCount the item's delivery count at that moment
 * @param lastHeartbeat the lease's last heartbeat, or null
 * @param reason what happened, for operators
 * @param createdAt when (store clock)
 * @param stdoutTail the delivery's standard output tail as it ended (or as of its last renewal
 *     that carried output, for an expiry or a cancellation), or null when none was reported
 * @param stderrTail its standard error tail likewise, or null
 */
public record Checkpoint(
    long id,
    long itemId,
    String kind,
    String leaseHolder,
    Long leaseToken,
    int deliveryCount,
    Instant lastHeartbeat,
    String reason,
    Instant createdAt,
    String stdoutTail,
    String stderrTail) {
  /** Kind written when an expired lease is reclaimed (by the sweep or by an acquirer). */
  public static final String LEASE_EXPIRED = "lease_expired";
  /** Kind written when a worker releases an item as failed. */
  public static final String RELEASED_FAILED = "released_failed";
  /** Kind written when a worker hands an item back without charging the attempt (shutdown, drain). */
  public static final String HANDED_BACK = "handed_back";
  /** Kind written when a worker dead-letters an item. */
  public static final String DEAD_LETTERED = "dead_lettered";
  /** Kind written when an operator requeues a failed item. */
  public static final String REDRIVEN = "redriven";
  /** Kind written when an operator cancels a pending or in-progress item ({@link QueueAdmin#cancel}). */
  public static final String CANCELLED = "cancelled";
  /**
   * Kind written when a delivery starts from the progress checkpoint an earlier delivery wrote;
   * its reason names that delivery and when it wrote the checkpoint.
   */
  public static final String PROGRESS_TAKEN_OVER = "progress_taken_over";

  /**
   * Whether this entry says how the delivery it names ended: every entry but a redrive (an
   * operator's action between deliveries), a progress takeover (written as its delivery starts)
   * and the cancellation of an item no lease held (a pending item, whose last delivery had
   * already ended with an entry of its own). A delivery's outcome is the last such entry of it;
   * the current delivery has none until it ends.
   *
   * @return whether it ends a delivery
   */
  public boolean endsDelivery() {
    return !REDRIVEN.equals(kind) && !PROGRESS_TAKEN_OVER.equals(kind)
        && !(CANCELLED.equals(kind) && leaseToken == null);
  }
}
