package dev.tether.jdbc;

import dev.tether.mailbox.LeaseStatus;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * What the store says of a lease ({@link LeaseManager#inspectLease}): its status by the token and
 * the store's clock, and the last beat its work recorded in the store through the token (a
 * progress checkpoint, or {@link LeaseManager#beat}), which extensions do not move.
 *
 * @param status held, expired, lost or cancelled
 * @param workBeatAt the last work beat recorded for the item (store clock; possibly by an earlier
 *     delivery, so compare two readings of one lease), or null when none was recorded or the
 *     lease is no longer held
 */
public record LeaseCheck(LeaseStatus status, Instant workBeatAt) {
  /**
   * Validates the status.
   *
   * @param status held, expired, lost or cancelled
   * @param workBeatAt the last work beat, or null
   */
  public LeaseCheck {
    Objects.requireNonNull(status, "status");
  }

  /**
   * Returns the last work beat.
   *
   * @return the instant, or empty
   */
  public Optional<Instant> lastWorkBeat() {
    return Optional.ofNullable(workBeatAt);
  }
}
