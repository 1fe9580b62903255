package dev.tether.jdbc;

import java.util.Locale;

/** The state of a work item, stored as its {@link #dbValue()}. */
public enum WorkStatus {
  /** Waiting to be acquired once {@code available_at} has passed. */
  PENDING,
  /** Leased to a worker until {@code lease_expires_at}. */
  IN_PROGRESS,
  /** Finished successfully; terminal. */
  COMPLETED,
  /** Finished unsuccessfully (attempts exhausted or dead-lettered); terminal until redriven. */
  FAILED,
  /** Cancelled by an operator or a program; terminal until requeued. */
  CANCELLED;

  /**
   * Returns whether the status is terminal (completed, failed or cancelled).
   *
   * @return true for a finished item
   */
  public boolean isFinished() {
    return this == COMPLETED || this == FAILED || this == CANCELLED;
  }

  /**
   * Returns the value stored in the {@code status} column.
   *
   * @return {@code pending}, {@code in_progress}, {@code completed}, {@code failed} or {@code
   *     cancelled}
   */
  public String dbValue() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * Parses a stored status.
   *
   * @param value the column value
   * @return the status
   * @throws IllegalArgumentException if the value is not a known status
   */
  public static WorkStatus fromDb(String value) {
    return valueOf(value.toUpperCase(Locale.ROOT));
  }
}
