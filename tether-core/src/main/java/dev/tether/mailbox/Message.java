package dev.tether.mailbox;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;

/**
 * One delivery of a message, holding the receipt handle of that delivery.
 *
 * <p>Every operation names this delivery's receipt handle (fencing): once the message has been
 * delivered again (after its visibility timeout passed), handed back or finalized, each operation
 * here throws {@link ReceiptHandleExpiredException} and changes nothing.
 *
 * <h2>Deliveries and attempts</h2>
 *
 * {@link #deliveryCount()} counts every delivery. {@link #attempt()} counts the deliveries charged
 * against the message's budget {@link #maxAttempts()}: a delivery is charged when it ends in a
 * failure ({@link #nack(Duration, String)}), in a dead letter, or in expiry (a worker that crashed
 * or hung cannot say which, so expiry is charged). A worker's own {@link #handBack()} (shutdown,
 * drain) is not charged. When a charged attempt spends the budget, the message is dead-lettered
 * and never delivered again, whichever path finds it (a nack, a receive that finds the lease
 * expired, a sweep).
 *
 * <p>Instances are thread-safe. Every operation but the accessors may block for one round trip to
 * the mailbox's store.
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
   * @throws RequestFailedException if this message is an {@linkplain #errorReply() error reply}
   *     (it has no body)
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
   * It only grows, so a handler writing to another system can use it as a fencing number that
   * lets that system refuse a write from an older delivery.
   *
   * @return the delivery count, at least 1
   */
  int deliveryCount();

  /**
   * Returns the charged attempt this delivery is, counting it (first = 1): deliveries ended by a
   * worker's own {@link #handBack()} are not counted.
   *
   * @return the attempt, 1 to {@link #maxAttempts()}
   */
  int attempt();

  /**
   * Returns the message's budget: the most charged attempts it gets before it is dead-lettered.
   *
   * @return at least 1
   */
  int maxAttempts();

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
   * Returns the id of the request this message answers, when it is a reply.
   *
   * @return the request's id, or empty for a message that is not a reply
   */
  default Optional<String> inReplyTo() {
    return Optional.empty();
  }

  /**
   * Returns the error this message carries when it is an error reply: the request it answers was
   * dead-lettered or cancelled, so there is no output ({@link #body()} throws).
   *
   * @return the error, or empty for an ordinary message or reply
   */
  default Optional<ErrorReply> errorReply() {
    return Optional.empty();
  }

  /**
   * Returns the kind of work this message asks for, as its sender labelled it (metrics tag by
   * it), when the mailbox carries such a label.
   *
   * @return the work type, or empty when the message has none (the default)
   */
  default Optional<String> workType() {
    return Optional.empty();
  }

  /**
   * Returns the headers the sender stored with the message: small text attributes such as a trace
   * context, the same on every delivery.
   *
   * @return an unmodifiable map, empty when the message has none (the default)
   */
  default Map<String, String> headers() {
    return Map.of();
  }

  /**
   * Returns the latest progress checkpoint of the message: the one this delivery wrote last, or
   * else the one the latest earlier delivery wrote (so a redelivered handler can resume).
   *
   * @return a copy of the checkpoint's bytes, or empty when none was written
   */
  Optional<byte[]> lastCheckpoint();

  /**
   * Records the handler's progress, replacing the previous checkpoint: fenced by this delivery's
   * receipt handle and durable (as durable as the mailbox) when it returns; the next delivery of
   * the message sees it in {@link #lastCheckpoint()}. It does not extend the lease (a {@code
   * WorkContext} checkpoint also beats).
   *
   * @param data the checkpoint, at most {@link Mailbox#MAX_CHECKPOINT_BYTES}; copied
   * @throws InvalidParameterException if the data is larger than the limit (nothing is written)
   * @throws ReceiptHandleExpiredException if the handle is stale; nothing is written
   * @throws MessageCancelledException if the message was cancelled
   * @throws MessageFinalizedException if this delivery already finalized it
   * @throws MailboxConnectionException if the store cannot be reached
   */
  void checkpoint(byte[] data);

  /**
   * Finalizes the message: it is never delivered again.
   *
   * @throws ReceiptHandleExpiredException if this delivery's lease was taken over or expired and
   *     the message redelivered
   * @throws MessageFinalizedException if this delivery already finalized it
   */
  void acknowledge();

  /**
   * Hands the message back without charging this attempt (a worker shutting down or draining):
   * it becomes visible again at once, its checkpoint is kept, and this delivery's receipt handle
   * becomes stale.
   *
   * @throws ReceiptHandleExpiredException if the handle is stale
   * @throws MessageCancelledException if the message was cancelled
   * @throws MessageFinalizedException if this delivery already finalized it
   * @throws MailboxConnectionException if the store cannot be reached
   */
  void handBack();

  /**
   * Hands the message back after a failed attempt, without a reason; see {@link #nack(Duration,
   * String)}.
   *
   * @param visibilityTimeout 0 to {@link Mailbox#MAX_VISIBILITY_TIMEOUT}
   * @throws ReceiptHandleExpiredException if the handle is stale
   * @throws MessageFinalizedException if this delivery already finalized it
   * @throws InvalidParameterException if the timeout is out of range
   */
  default void nack(Duration visibilityTimeout) {
    nack(visibilityTimeout, null);
  }

  /**
   * Ends this attempt as failed (charged): the message becomes visible again after {@code
   * visibilityTimeout} (zero: at once), or, when this was its last attempt, it is dead-lettered
   * with {@code reason}. Either way this delivery's receipt handle becomes stale.
   *
   * @param visibilityTimeout 0 to {@link Mailbox#MAX_VISIBILITY_TIMEOUT}
   * @param reason why the attempt failed, for operators (kept with the message), or null
   * @return whether the message will be retried or was dead-lettered
   * @throws ReceiptHandleExpiredException if the handle is stale
   * @throws MessageCancelledException if the message was cancelled
   * @throws MessageFinalizedException if this delivery already finalized it
   * @throws InvalidParameterException if the timeout is out of range
   * @throws MailboxConnectionException if the store cannot be reached
   */
  NackOutcome nack(Duration visibilityTimeout, String reason);

  /**
   * Extends this delivery's lease so that it expires no earlier than {@code timeout} from now, by
   * the mailbox's clock. Never shortens a lease: the new expiry is {@code max(current expiry, now
   * + timeout)}.
   *
   * @param timeout 0 to {@link Mailbox#MAX_VISIBILITY_TIMEOUT}
   * @throws ReceiptHandleExpiredException if the handle is stale (the lease is lost)
   * @throws MessageCancelledException if the message was cancelled
   * @throws MessageFinalizedException if this delivery already finalized it
   * @throws InvalidParameterException if the timeout is out of range
   */
  void extendVisibility(Duration timeout);

  /**
   * Asks the mailbox whether this delivery still holds its lease, by the receipt handle and the
   * mailbox's clock (a database's own clock, never this process's). Changes nothing. Blocks for
   * one read of the store.
   *
   * @return the lease's status
   * @throws MailboxConnectionException if the store cannot be reached
   */
  LeaseStatus checkLease();

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
   * Finalizes the message as a dead letter with {@code reason} (this attempt is charged): it is
   * never delivered again and is kept where the implementation keeps dead letters (for
   * inspection and redrive). When it was sent with a reply-to mailbox, the requester is sent an
   * {@linkplain ErrorReply error reply} in the same step.
   *
   * @param reason why, for operators
   * @throws ReceiptHandleExpiredException if the handle is stale
   * @throws MessageFinalizedException if this delivery already finalized it
   */
  void deadLetter(String reason);

  /**
   * When this delivery's lease was requested, as a {@link System#nanoTime()} reading taken just
   * before the request that granted it (for a long poll, the last attempt of the wait, not its
   * start), if the mailbox knows. The lease was granted for the visibility timeout no earlier than
   * that instant, so it surely lasts until the reading plus the visibility timeout: a holder can
   * bound its lease by its own monotonic clock without counting the time the receive waited.
   *
   * @return the reading, or empty when unknown (the holder then counts from before its receive)
   */
  default java.util.OptionalLong leaseRequestedAtNanos() {
    return java.util.OptionalLong.empty();
  }

  /**
   * Asks to be told promptly when this message is cancelled while this delivery holds it, rather
   * than at its holder's next call to the mailbox: {@code onCancelled} runs at most once, on a
   * thread of the mailbox's, and must be fast and not throw (a flag to set, a process to signal).
   * How promptly depends on the mailbox (a notification, or a periodic check of all the messages
   * it watches). Close the returned subscription when the delivery ends. A mailbox that cannot
   * watch returns one that does nothing; the holder then learns of a cancellation at its next
   * call ({@link #checkLease()}, {@link #extendVisibility}, ...).
   *
   * @param onCancelled what to run once the message is found cancelled
   * @return the subscription; closing it stops the watch (idempotent)
   */
  default Subscription watchCancellation(Runnable onCancelled) {
    return Subscription.NONE;
  }

  /** A watch started by {@link #watchCancellation}; closing it ends the watch. */
  @FunctionalInterface
  interface Subscription extends AutoCloseable {
    /** A subscription that watches nothing. */
    Subscription NONE = () -> {};

    /** Ends the watch; idempotent, never throws. */
    @Override
    void close();
  }

  /**
   * Registers where this delivery's latest output comes from. A store that keeps output calls
   * {@code source} when it extends the lease (at most once per extension; the tails are written
   * only when {@link OutputTail#bytes()} changed) and once more when the delivery ends by {@link
   * #nack}, {@link #handBack()} or {@link #deadLetter}, and keeps the tails with the delivery;
   * expiry and cancellation keep the tails of the last extension. The default does nothing.
   *
   * @param source returns the current output; called on the extending or ending thread, must be
   *     fast and not throw (a failure is logged and the output skipped)
   */
  default void reportOutput(java.util.function.Supplier<OutputTail> source) {}

  /**
   * Writes the {@linkplain #reportOutput reported output} now if it changed since it was last
   * written, without extending the lease: for a delivery that went quiet after output that no
   * extension carried (extensions are rate-limited, so the output of the first moments, or of the
   * last moments before a hang, may not have been), so that the store shows where it stopped.
   * Changes nothing when the lease is no longer held. The default does nothing.
   */
  default void flushOutput() {}
}
