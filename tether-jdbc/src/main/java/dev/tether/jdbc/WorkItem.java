package dev.tether.jdbc;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A snapshot of one work item row with its audit trail. Immutable. Two snapshots are equal when
 * they show the same item at the same {@code updatedAt}.
 *
 * @param id the id
 * @param queue the queue
 * @param taskId the task id, or null
 * @param workType the work type, or null
 * @param status the status
 * @param priority the priority
 * @param leaseHolder the current (or, once finished, last) holder, or null
 * @param leaseToken the current lease token, or null
 * @param leaseAcquiredAt when the current lease was acquired, or null
 * @param leaseExpiresAt when the current lease expires, or null
 * @param heartbeatAt the last renewal, or null
 * @param deliveryCount deliveries so far
 * @param attempts charged attempts so far (a worker's own hand-backs are not charged)
 * @param maxAttempts the item's budget of charged attempts
 * @param availableAt when a pending item becomes available
 * @param idempotencyKey the idempotency key, or null
 * @param replyTo the reply-to queue, or null
 * @param input the input bytes, or null
 * @param output the output bytes, or null
 * @param errorMessage the last error, or null
 * @param createdAt when enqueued
 * @param startedAt first acquisition, or null
 * @param completedAt when finished, or null
 * @param updatedAt last change
 * @param checkpoints the audit trail, oldest first (empty when not loaded)
 * @param progress the latest progress checkpoint, or null
 * @param progressAt when it was written, or null
 * @param progressDelivery the delivery that wrote it, or null
 * @param replyOf the id of the request this item answers, or null
 * @param errorReply whether it is an error reply
 * @param stdoutTail the latest standard output tail of delivery {@code outputDelivery}, as of its
 *     last renewal that carried output (or its end); null when none was reported or not loaded
 *     (listings leave the tails out)
 * @param stderrTail the latest standard error tail likewise, or null
 * @param outputAt when that delivery last wrote output (store clock), or null
 * @param outputDelivery the delivery the tails belong to, or null
 */
public record WorkItem(
    long id,
    String queue,
    String taskId,
    String workType,
    WorkStatus status,
    int priority,
    String leaseHolder,
    Long leaseToken,
    Instant leaseAcquiredAt,
    Instant leaseExpiresAt,
    Instant heartbeatAt,
    int deliveryCount,
    int attempts,
    int maxAttempts,
    Instant availableAt,
    String idempotencyKey,
    String replyTo,
    byte[] input,
    byte[] output,
    String errorMessage,
    Instant createdAt,
    Instant startedAt,
    Instant completedAt,
    Instant updatedAt,
    List<Checkpoint> checkpoints,
    byte[] progress,
    Instant progressAt,
    Integer progressDelivery,
    Long replyOf,
    boolean errorReply,
    String stdoutTail,
    String stderrTail,
    Instant outputAt,
    Integer outputDelivery) {

  /**
   * Returns the input decoded as UTF-8.
   *
   * @return the text, or null
   */
  public String inputAsString() {
    return input == null ? null : new String(input, StandardCharsets.UTF_8);
  }

  /**
   * Returns the output decoded as UTF-8.
   *
   * @return the text, or null
   */
  public String outputAsString() {
    return output == null ? null : new String(output, StandardCharsets.UTF_8);
  }

  /**
   * Returns the audit entry that says how delivery {@code delivery} ended: the last of its
   * entries that {@linkplain Checkpoint#endsDelivery ends a delivery}. Empty for the current
   * delivery until it ends (its outcome is then the item's status), and when the audit trail was
   * not loaded or has been trimmed.
   *
   * @param delivery the delivery, counted from 1
   * @return the entry, if any
   */
  public Optional<Checkpoint> endOfDelivery(int delivery) {
    Checkpoint last = null;
    for (Checkpoint c : checkpoints) {
      if (c.deliveryCount() == delivery && c.endsDelivery()) {
        last = c;
      }
    }
    return Optional.ofNullable(last);
  }

  /**
   * Returns every delivery so far, oldest first: how each ended, from the audit trail, and how the
   * current one stands, from the row ({@link Delivery}). An earlier delivery whose ending entry
   * is not loaded (listings leave the trail out) or was trimmed is {@linkplain Delivery#isUnknown
   * unknown}.
   *
   * @return one entry per delivery, {@code deliveryCount} in all
   */
  public List<Delivery> deliveries() {
    List<Delivery> out = new ArrayList<>(deliveryCount);
    boolean currentTails = outputDelivery != null && outputDelivery == deliveryCount;
    for (int d = 1; d <= deliveryCount; d++) {
      Checkpoint end = endOfDelivery(d).orElse(null);
      if (end != null) {
        out.add(new Delivery(d, end.kind(), end.leaseHolder(), end.reason(), end.createdAt(),
            end.stdoutTail(), end.stderrTail()));
      } else if (d == deliveryCount) {
        out.add(new Delivery(d, status.dbValue(), leaseHolder,
            status.isFinished() ? errorMessage : null,
            completedAt != null ? completedAt : updatedAt,
            currentTails ? stdoutTail : null, currentTails ? stderrTail : null));
      } else {
        out.add(new Delivery(d, Delivery.UNKNOWN, null, null, null, null, null));
      }
    }
    return out;
  }

  @Override
  public String toString() {
    return "WorkItem[id=" + id + ", queue=" + queue + ", status=" + status + ", delivery="
        + deliveryCount + ", attempts=" + attempts + "/" + maxAttempts + ", holder=" + leaseHolder
        + ", error=" + errorMessage + "]";
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof WorkItem && ((WorkItem) o).id == id && ((WorkItem) o).updatedAt.equals(updatedAt);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(id);
  }
}
