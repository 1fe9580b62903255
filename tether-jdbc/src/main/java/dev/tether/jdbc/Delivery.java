package dev.tether.jdbc;

import java.time.Instant;

/**
 * How one delivery of a work item ended, or how it stands while it is the item's current one
 * ({@link WorkItem#deliveries()}). An ended delivery is told by the audit entry that {@linkplain
 * Checkpoint#endsDelivery ends} it; the current delivery has no such entry until it is handed
 * back, released, expires or is cancelled, and is told by the item's own row. Immutable.
 *
 * @param number the delivery, counted from 1
 * @param outcome the kind of its ending audit entry ({@code lease_expired}, {@code
 *     handed_back}, ...); for the current delivery without one, the item's status ({@code
 *     in_progress}, {@code completed}, ...); {@link #UNKNOWN} for an earlier delivery whose entry
 *     was not loaded or has been trimmed
 * @param holder the worker that held its lease, or null
 * @param reason why it ended, or null: while the current delivery waits or runs, the item's
 *     error is an earlier delivery's and is not this one's reason
 * @param at when it ended, or when the item last changed while it is the current one; null when
 *     unknown
 * @param stdoutTail its standard output tail as it ended (the current one's latest), or null
 * @param stderrTail its standard error tail likewise, or null
 */
public record Delivery(
    int number,
    String outcome,
    String holder,
    String reason,
    Instant at,
    String stdoutTail,
    String stderrTail) {
  /** The outcome of an earlier delivery whose ending entry is not in the loaded audit trail. */
  public static final String UNKNOWN = "unknown";

  /** Whether the loaded audit trail says nothing of how this delivery ended. */
  public boolean isUnknown() {
    return UNKNOWN.equals(outcome);
  }
}
