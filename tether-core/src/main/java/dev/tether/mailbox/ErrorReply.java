package dev.tether.mailbox;

import java.util.Objects;

/**
 * The answer a requester receives instead of an output when its request ended without one: the
 * request was dead-lettered (its budget spent, an error that dead-letters at once) or cancelled.
 * Delivered as a reply message whose {@link Message#errorReply()} is present. Immutable.
 *
 * @param requestId the id of the request that failed
 * @param reason why, for the requester and operators
 * @param attempts the charged attempts the request had used
 * @param cancelled true when the request was cancelled rather than dead-lettered
 */
public record ErrorReply(String requestId, String reason, int attempts, boolean cancelled) {
  /**
   * Validates the components.
   *
   * @param requestId the id of the request that failed
   * @param reason why
   * @param attempts charged attempts used, at least 0
   * @param cancelled whether it was cancelled
   * @throws NullPointerException if the id or reason is null
   * @throws IllegalArgumentException if {@code attempts} is negative
   */
  public ErrorReply {
    Objects.requireNonNull(requestId, "requestId");
    Objects.requireNonNull(reason, "reason");
    if (attempts < 0) {
      throw new IllegalArgumentException("attempts must be >= 0, was " + attempts);
    }
  }
}
