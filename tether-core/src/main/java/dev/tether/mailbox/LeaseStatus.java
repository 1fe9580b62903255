package dev.tether.mailbox;

/**
 * What the mailbox says of one delivery's lease when asked ({@link Message#checkLease()}),
 * decided by the mailbox's clock (for a database, the database's).
 */
public enum LeaseStatus {
  /** The receipt handle is current and the visibility timeout has not passed. */
  HELD,
  /**
   * The receipt handle is still current but the visibility timeout passed: any receiver may take
   * the message over at any moment. A worker should stop (its result may still be accepted if it
   * finishes before a takeover, but another worker may be running the same message).
   */
  EXPIRED,
  /**
   * The receipt handle is stale: the message was delivered again, handed back, finalized or
   * purged. Nothing done through this delivery will be accepted.
   */
  LOST,
  /** The message was cancelled: it will never be delivered again. Stop working on it. */
  CANCELLED;

  /**
   * Returns whether a worker holding this delivery should go on.
   *
   * @return true only for {@link #HELD}
   */
  public boolean isHeld() {
    return this == HELD;
  }
}
