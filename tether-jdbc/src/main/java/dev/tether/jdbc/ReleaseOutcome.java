package dev.tether.jdbc;

/** What {@link LeaseManager#release} did with the item. */
public enum ReleaseOutcome {
  /** The item is {@code completed}. */
  COMPLETED,
  /** The item failed and is {@code pending} again, available after a backoff. */
  RETRY_SCHEDULED,
  /** The item failed on its last allowed delivery and is {@code failed}. */
  FAILED
}
