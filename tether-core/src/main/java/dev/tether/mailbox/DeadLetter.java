package dev.tether.mailbox;

import java.time.Instant;
import java.util.Objects;

/**
 * A message that was finalized as a dead letter: it will not be delivered again unless an
 * operator redrives it. Immutable; thread-safe if the body is.
 *
 * @param messageId the id the message had in its mailbox
 * @param body the message's body, or null when the dead-lettered message was itself an {@link
 *     ErrorReply error reply}
 * @param reason why it was dead-lettered, for operators (for example {@code "lease expired on
 *     attempt 3 of 3"})
 * @param deliveryCount how many times it had been delivered when it was dead-lettered
 * @param attempts how many of those deliveries were charged against its budget
 * @param enqueuedAt when it was sent, by its mailbox's clock
 * @param deadLetteredAt when it was dead-lettered, by its mailbox's clock
 * @param <T> the body type
 */
public record DeadLetter<T>(
    String messageId,
    T body,
    String reason,
    int deliveryCount,
    int attempts,
    Instant enqueuedAt,
    Instant deadLetteredAt) {

  /**
   * Validates the components.
   *
   * @param messageId the message id
   * @param body the body
   * @param reason why it was dead-lettered
   * @param deliveryCount deliveries so far
   * @param attempts charged attempts so far
   * @param enqueuedAt when it was sent
   * @param deadLetteredAt when it was dead-lettered
   * @throws NullPointerException if a component other than the body is null
   * @throws IllegalArgumentException if {@code deliveryCount} or {@code attempts} is negative
   */
  public DeadLetter {
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(enqueuedAt, "enqueuedAt");
    Objects.requireNonNull(deadLetteredAt, "deadLetteredAt");
    if (deliveryCount < 0 || attempts < 0) {
      throw new IllegalArgumentException(
          "deliveryCount and attempts must be >= 0, were " + deliveryCount + " and " + attempts
              + " for message " + messageId);
    }
  }
}
