package dev.tether.jdbc;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;

/**
 * One acquisition of a work item: the fencing token every later operation must name, and the
 * item's data as of the acquisition. Immutable. Two leases are equal when they name the same item
 * and token.
 *
 * @param itemId the work item id
 * @param token the fencing token, new on every acquisition
 * @param holder the worker that acquired it
 * @param queue the queue
 * @param taskId the task id, or null
 * @param workType the work type, or null
 * @param priority the priority
 * @param deliveryCount deliveries including this one (first = 1)
 * @param attempt the charged attempt this delivery is (first = 1; a worker's own hand-back is
 *     refunded, so the next delivery has the same attempt)
 * @param maxAttempts the item's budget of charged attempts
 * @param acquiredAt when the lease was acquired (store clock)
 * @param expiresAt when the lease expires unless renewed (store clock)
 * @param input the input bytes, or null
 * @param replyTo the reply-to queue, or null
 * @param createdAt when the item was enqueued
 * @param progress the item's latest progress checkpoint (left by an earlier delivery), or null
 * @param replyOf the id of the request this item answers, when it is a reply, or null
 * @param errorReply whether it is an error reply (its input encodes the error)
 * @param headers the headers stored with the item, as the {@code headers} column holds them, or
 *     null for none (see {@link #headerMap()})
 */
public record Lease(
    long itemId,
    long token,
    String holder,
    String queue,
    String taskId,
    String workType,
    int priority,
    int deliveryCount,
    int attempt,
    int maxAttempts,
    Instant acquiredAt,
    Instant expiresAt,
    byte[] input,
    String replyTo,
    Instant createdAt,
    byte[] progress,
    Long replyOf,
    boolean errorReply,
    String headers) {

  /**
   * Returns the input decoded as UTF-8.
   *
   * @return the text, or null
   */
  public String inputAsString() {
    return input == null ? null : new String(input, StandardCharsets.UTF_8);
  }

  /**
   * Returns the headers stored with the item.
   *
   * @return an unmodifiable map, empty when none
   */
  public Map<String, String> headerMap() {
    return Headers.decode(headers);
  }

  @Override
  public String toString() {
    return "Lease[item=" + itemId + ", token=" + token + ", holder=" + holder + ", queue=" + queue
        + ", delivery=" + deliveryCount + ", attempt=" + attempt + "/" + maxAttempts
        + ", expiresAt=" + expiresAt + "]";
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Lease && ((Lease) o).itemId == itemId && ((Lease) o).token == token;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(itemId) * 31 + Long.hashCode(token);
  }
}
