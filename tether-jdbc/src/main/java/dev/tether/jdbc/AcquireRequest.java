package dev.tether.jdbc;

import dev.tether.QueueName;
import java.time.Duration;
import java.util.Objects;

/**
 * What to acquire: up to {@code maxItems} available items of {@code queue}, leased for {@code
 * leaseDuration}, optionally filtered by work type and task id.
 *
 * @param queue the queue; see {@link QueueName} for the rule
 * @param leaseDuration 0 to 12 hours
 * @param maxItems 1 to 1000
 * @param workType only items of this work type, or null for any
 * @param taskId only items of this task, or null for any
 */
public record AcquireRequest(
    String queue, Duration leaseDuration, int maxItems, String workType, String taskId) {
  /** Longest lease. */
  public static final Duration MAX_LEASE = Duration.ofHours(12);

  /**
   * Validates the request.
   *
   * @throws IllegalArgumentException naming the value and the rule
   */
  public AcquireRequest {
    QueueName.requireValid(queue, "queue");
    Objects.requireNonNull(leaseDuration, "leaseDuration");
    if (leaseDuration.isNegative() || leaseDuration.compareTo(MAX_LEASE) > 0) {
      throw new IllegalArgumentException(
          "leaseDuration must be in 0.." + MAX_LEASE + ", was " + leaseDuration);
    }
    if (maxItems < 1 || maxItems > 1000) {
      throw new IllegalArgumentException("maxItems must be in 1..1000, was " + maxItems);
    }
  }

  /**
   * Returns a request for one item of {@code queue}.
   *
   * @param queue the queue
   * @param leaseDuration the lease
   * @return the request
   */
  public static AcquireRequest one(String queue, Duration leaseDuration) {
    return new AcquireRequest(queue, leaseDuration, 1, null, null);
  }

  /**
   * Returns a request for up to {@code maxItems} items of {@code queue}.
   *
   * @param queue the queue
   * @param leaseDuration the lease
   * @param maxItems the batch size
   * @return the request
   */
  public static AcquireRequest batch(String queue, Duration leaseDuration, int maxItems) {
    return new AcquireRequest(queue, leaseDuration, maxItems, null, null);
  }
}
