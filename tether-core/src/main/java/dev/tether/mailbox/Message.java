package dev.tether.mailbox;

import java.time.Duration;
import java.time.Instant;

/**
 * One delivery of a message, holding the receipt handle of that delivery.
 *
 * <p>Every operation names this delivery's receipt handle (fencing): once the message has been
 * delivered again (after its visibility timeout passed) or finalized, each operation here throws
 * {@link ReceiptHandleExpiredException} and changes nothing. Instances are thread-safe.
 *
 * @param <T> the body type
 * @param <R> the reply body type
 */
public interface Message<T, R> {

  /**
   * Returns the message id, the same on every delivery.
   *
   * @return the id
   */
  String id();

  /**
   * Returns the body.
   *
   * @return the body
   */
  T body();

  /**
   * Returns this delivery's receipt handle, new on every delivery.
   *
   * @return the handle
   */
  String receiptHandle();

  /**
   * Returns how many times the message has been delivered, counting this delivery (first = 1).
   *
   * @return the delivery count, at least 1
   */
  int deliveryCount();

  /**
   * Returns when the message was sent, by the mailbox's clock.
   *
   * @return the enqueue instant
   */
  Instant enqueuedAt();

  /**
   * Returns whether the message was sent with a reply-to mailbox.
   *
   * @return true if {@link #reply} can be used
   */
  boolean hasReplyTo();

  /**
   * Finalizes the message: it is never delivered again.
   *
   * @throws ReceiptHandleExpiredException if this delivery's lease was taken over or expired and
   *     the message redelivered
   * @throws MessageFinalizedException if this delivery already finalized it
   */
  void acknowledge();

  /**
   * Hands the message back: it becomes visible again after {@code visibilityTimeout} (zero: at
   * once). This delivery's receipt handle becomes stale.
   *
   * @param visibilityTimeout 0 to {@link Mailbox#MAX_VISIBILITY_TIMEOUT}
   * @throws ReceiptHandleExpiredException if the handle is stale
   * @throws MessageFinalizedException if this delivery already finalized it
   * @throws InvalidParameterException if the timeout is out of range
   */
  void nack(Duration visibilityTimeout);

  /**
   * Extends this delivery's lease so that it expires no earlier than {@code timeout} from now, by
   * the mailbox's clock. Never shortens a lease: the new expiry is {@code max(current expiry, now
   * + timeout)}.
   *
   * @param timeout 0 to {@link Mailbox#MAX_VISIBILITY_TIMEOUT}
   * @throws ReceiptHandleExpiredException if the handle is stale (the lease is lost)
   * @throws MessageFinalizedException if this delivery already finalized it
   * @throws InvalidParameterException if the timeout is out of range
   */
  void extendVisibility(Duration timeout);

  /**
   * Sends {@code body} to the reply-to mailbox without finalizing this message, if this delivery
   * still holds the lease.
   *
   * @param body the reply
   * @throws ReplyNotAvailableException if the message has no reply-to mailbox
   * @throws ReceiptHandleExpiredException if the handle is stale; nothing is sent
   * @throws MessageFinalizedException if this delivery already finalized it
   */
  void reply(R body);

  /**
   * Sends {@code body} to the reply-to mailbox (if any) and finalizes this message, as one step:
   * either both happen or neither does, and neither happens through a stale handle.
   *
   * @param body the reply; ignored when the message has no reply-to mailbox
   * @throws ReceiptHandleExpiredException if the handle is stale; nothing is sent
   * @throws MessageFinalizedException if this delivery already finalized it
   * @throws MailboxFullException if the reply mailbox is full; the message is not finalized
   */
  void replyAndAcknowledge(R body);

  /**
   * Finalizes the message as a dead letter with {@code reason}: it is never delivered again and is
   * kept where the implementation keeps dead letters (for inspection and redrive).
   *
   * @param reason why, for operators
   * @throws ReceiptHandleExpiredException if the handle is stale
   * @throws MessageFinalizedException if this delivery already finalized it
   */
  void deadLetter(String reason);
}
