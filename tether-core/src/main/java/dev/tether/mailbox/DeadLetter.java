package dev.tether.mailbox;

import java.time.Instant;
import java.util.Objects;

/**
 * A message that was finalized as a dead letter: it will not be delivered again unless an
 * operator redrives it. Immutable; thread-safe if the body is.
 *
 * @param messageId the id the message had in its mailbox
 * @param body the message's body
 * @param reason why it was dead-lettered, for operators (for example {@code "lease expired on
 *     delivery 3 of 3"})
 * @param deliveryCount how many times it had been delivered when it was dead-lettered
 * @param enqueuedAt when it was sent, by its mailbox's clock
 * @param deadLetteredAt when it was dead-lettered, by its mailbox's clock
 * @param <T> the body type
 */
public record DeadLetter<T>(
    String messageId,
    T body,
    String reason,
    int deliveryCount,
    Instant enqueuedAt,
    Instant deadLetteredAt) {

  /**
   * Validates the components.
   *
   * @throws NullPointerException if any component is null
   * @throws IllegalArgumentException if {@code deliveryCount} is negative
   */
  public DeadLetter {
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(body, "body");
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(enqueuedAt, "enqueuedAt");
    Objects.requireNonNull(deadLetteredAt, "deadLetteredAt");
    if (deliveryCount < 0) {
      throw new IllegalArgumentException(
          "deliveryCount must be >= 0, was " + deliveryCount + " for message " + messageId);
    }
  }
}
