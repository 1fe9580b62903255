package dev.tether.mailbox;

/**
 * What a charged {@link Message#nack(java.time.Duration, String) nack} did to its message.
 */
public enum NackOutcome {
  /** The message becomes visible again after the requested delay; its budget has attempts left. */
  RETRY_SCHEDULED,
  /**
   * The nacked attempt was the message's last charged attempt: the message was dead-lettered
   * instead (and its requester, if any, was sent an error reply).
   */
  DEAD_LETTERED
}
