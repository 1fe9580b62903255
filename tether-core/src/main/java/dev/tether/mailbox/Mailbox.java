package dev.tether.mailbox;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * A durable-or-not queue of messages leased to workers for a visibility timeout, after the model
 * of Amazon SQS.
 *
 * <h2>Contract</h2>
 *
 * Every implementation keeps these invariants (checked by the shared contract test suite):
 *
 * <ul>
 *   <li>a message is in exactly one state: <em>visible</em> (receivable), <em>invisible</em>
 *       (leased through one receipt handle until its visibility timeout passes) or
 *       <em>finalized</em> (acknowledged or dead-lettered, never delivered again);
 *   <li>each delivery gets a new receipt handle; handles are never reused;
 *   <li>no message is lost: a sent message is eventually finalized, or stays receivable;
 *   <li>{@link Message#deliveryCount()} never decreases; the first delivery is 1;
 *   <li>an operation through a stale handle changes nothing and throws {@link
 *       ReceiptHandleExpiredException} (or {@link MessageFinalizedException} for a second
 *       finalization through the same handle);
 *   <li>expiry is decided at the moment of each operation by the mailbox's clock, not by the
 *       timing of a background reaper: an expired lease is receivable again at once;
 *   <li>one budget: each message gets at most {@link Message#maxAttempts()} charged attempts
 *       (expiry, failure and dead-lettering are charged; a worker's own {@link Message#handBack()}
 *       is not); the attempt that spends it dead-letters the message, by whichever path finds it
 *       (a nack, a receive finding the lease expired), and a dead letter is never delivered again;
 *   <li>every request is answered: a message sent with a reply-to mailbox that ends as a dead
 *       letter sends its requester an {@linkplain ErrorReply error reply} in the same step.
 * </ul>
 *
 * <p>Implementations are thread-safe. {@link #receive} blocks for at most its wait time; {@link
 * #close()} wakes blocked receivers, which then return what they have (possibly nothing).
 *
 * @param <T> the body type of the messages in this mailbox
 * @param <R> the body type of replies to them
 */
public interface Mailbox<T, R> extends AutoCloseable {

  /** Most messages one {@link #receive} may return, as in SQS. */
  int MAX_MESSAGES_PER_RECEIVE = 10;

  /** Longest visibility timeout, as in SQS. */
  Duration MAX_VISIBILITY_TIMEOUT = Duration.ofHours(12);

  /** Longest long-poll wait of one {@link #receive}. */
  Duration MAX_WAIT_TIME = Duration.ofSeconds(20);

  /** Default budget of a message: {@value} charged attempts (see {@link Message#attempt()}). */
  int DEFAULT_MAX_ATTEMPTS = 3;

  /**
   * Largest progress checkpoint ({@link Message#checkpoint(byte[])}): {@value} bytes (1 MiB).
   * Larger state belongs in a blob store, with a reference in the checkpoint.
   */
  int MAX_CHECKPOINT_BYTES = 1024 * 1024;

  /**
   * Returns the mailbox's name (a queue name), used in logs and metrics.
   *
   * @return the name
   */
  String name();

  /**
   * Sends a message without a reply-to mailbox.
   *
   * @param body the body; not null
   * @return the new message's id
   * @throws MailboxFullException if the mailbox is at its bound
   * @throws SerializationException if the body cannot be encoded or is too large
   * @throws MailboxConnectionException if the store cannot be reached
   * @throws IllegalStateException if the mailbox is closed
   */
  String send(T body);

  /**
   * Sends a message with headers: small text attributes stored with it and delivered on every
   * {@link Message#headers()} (a trace context, say). The default sends without headers when
   * {@code headers} is empty and refuses otherwise; mailboxes that store headers override it.
   *
   * @param body the body; not null
   * @param headers the headers; not null, keys not blank
   * @return the new message's id
   * @throws UnsupportedOperationException if headers are given and this mailbox cannot store them
   * @throws InvalidParameterException if the headers are too large for this mailbox
   * @throws MailboxFullException if the mailbox is at its bound
   * @throws SerializationException if the body cannot be encoded or is too large
   * @throws MailboxConnectionException if the store cannot be reached
   */
  default String send(T body, Map<String, String> headers) {
    if (!headers.isEmpty()) {
      throw new UnsupportedOperationException(getClass().getName()
          + " cannot store message headers; nothing was sent to '" + name() + "'");
    }
    return send(body);
  }

  /**
   * Sends a message whose replies go to {@code replyTo}.
   *
   * @param body the body; not null
   * @param replyTo where {@link Message#reply} and {@link Message#replyAndAcknowledge} send; an
   *     implementation may require a mailbox of its own kind (to make reply and acknowledge
   *     atomic) and throws {@link InvalidParameterException} otherwise
   * @return the new message's id
   * @throws MailboxFullException if the mailbox is at its bound
   * @throws SerializationException if the body cannot be encoded or is too large
   * @throws InvalidParameterException if {@code replyTo} is not usable by this implementation
   */
  String send(T body, Mailbox<R, ?> replyTo);

  /**
   * Sends a reply to the request {@code inReplyTo}. Called by the mailbox of a request that was
   * sent with this mailbox as its reply-to, when the request is answered; the reply's {@link
   * Message#inReplyTo()} names the request. The default sends a plain message (the correlation is
   * lost); implementations that carry it override this.
   *
   * @param body the reply; not null
   * @param inReplyTo the id of the request it answers
   * @return the reply's id
   * @throws MailboxFullException if the mailbox is at its bound
   * @throws SerializationException if the body cannot be encoded or is too large
   */
  default String sendReply(T body, String inReplyTo) {
    return send(body);
  }

  /**
   * Sends an {@linkplain ErrorReply error reply}: the request it names ended without an output.
   * Called by the mailbox of a request that was sent with this mailbox as its reply-to, when the
   * request is dead-lettered or cancelled; the reply's {@link Message#errorReply()} is present and
   * its {@link Message#body()} throws {@link RequestFailedException}.
   *
   * @param error the error
   * @return the reply's id
   * @throws UnsupportedOperationException if this mailbox cannot carry error replies (the
   *     default)
   * @throws MailboxFullException if the mailbox is at its bound
   */
  default String sendErrorReply(ErrorReply error) {
    throw new UnsupportedOperationException(
        getClass().getName() + " cannot carry error replies; request " + error.requestId()
            + " (" + error.reason() + ") is not answered");
  }

  /**
   * Receives up to {@code maxMessages} visible messages, making each invisible for {@code
   * visibilityTimeout} and incrementing its delivery count. Waits up to {@code waitTime} for the
   * first message when none is visible, returning as soon as one is (long poll).
   *
   * <p>If the calling thread is interrupted, returns what it has (possibly nothing) with the
   * interrupt flag set.
   *
   * @param maxMessages 1 to {@value #MAX_MESSAGES_PER_RECEIVE}
   * @param visibilityTimeout 0 to {@link #MAX_VISIBILITY_TIMEOUT}
   * @param waitTime 0 to {@link #MAX_WAIT_TIME}
   * @return the received messages, oldest first; empty if none arrived in time or the mailbox
   *     was closed meanwhile
   * @throws InvalidParameterException if an argument is out of range
   * @throws MailboxConnectionException if the store cannot be reached
   */
  List<Message<T, R>> receive(int maxMessages, Duration visibilityTimeout, Duration waitTime);

  /**
   * Returns an approximate count of messages not yet finalized (visible and invisible).
   *
   * @return the count; may be stale under concurrent use
   */
  long approximateCount();

  /**
   * Deletes every message not yet finalized. Outstanding receipt handles become stale.
   *
   * @return how many were deleted
   */
  long purge();

  /**
   * Returns whether the mailbox's store looks usable right now, for readiness probes: false from
   * the moment a store call fails for a reason outside the caller's control (the database cannot
   * be reached, a lost connection, a full disk) until a store call started after that failure
   * works again. It never blocks and never touches the store; it reports what the mailbox's own
   * calls (and those of anything sharing its store) have seen.
   *
   * <p>The default returns true: a mailbox without an external store (such as {@link
   * InMemoryMailbox}) is always available.
   *
   * @return false while the store is known to be failing
   */
  default boolean isAvailable() {
    return true;
  }

  /**
   * Makes every acknowledgement this mailbox accepted so far durable, for a mailbox that may
   * return from {@link Message#acknowledge()} before the acknowledgement is durable (an opt-in
   * mode of some mailboxes); returns once they are. {@link dev.tether.loop.MainLoop} calls it when
   * it stops. The default does nothing: acknowledgements are durable when they return.
   */
  default void flushAcknowledgements() {}

  /** Closes the mailbox and wakes blocked receivers; idempotent. */
  @Override
  void close();
}
