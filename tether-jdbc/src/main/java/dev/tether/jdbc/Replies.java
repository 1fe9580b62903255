package dev.tether.jdbc;

import dev.tether.mailbox.ErrorReply;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;

/**
 * Every request is answered: when an item sent with a reply-to queue is dead-lettered (its budget
 * spent by expiry or failure, a dead letter asked for) or cancelled, its requester gets an error
 * reply in the same transaction, so nobody waits forever. An error reply is an item of the reply
 * queue that names the request ({@code reply_of}) and carries the {@link ErrorReply} in its input,
 * in a small text form of Tether's own ({@link #encode}, {@link #decode}). Stateless apart from
 * its collaborators, so thread-safe.
 */
final class Replies {
  private static final String ATTEMPTS = "attempts=";
  private static final String CANCELLED = "cancelled=";

  private final StoreEngine engine;
  private final Inserts inserts;

  Replies(StoreEngine engine, Inserts inserts) {
    this.engine = engine;
    this.inserts = inserts;
  }

  /**
   * Inserts the error reply of request {@code requestId} into {@code replyTo}, in the caller's
   * transaction, and notifies waiting receivers once it commits. Does nothing when the request
   * had no reply-to queue.
   */
  void answerWithError(Connection c, long requestId, String replyTo, String reason, int attempts,
      boolean cancelled, Instant now) throws SQLException {
    if (replyTo == null) {
      return;
    }
    ErrorReply error = new ErrorReply(Long.toString(requestId),
        reason == null ? (cancelled ? "cancelled" : "failed") : reason, attempts, cancelled);
    inserts.insert(c, NewWorkItem.builder(replyTo).input(encode(error)).replyOf(requestId)
        .errorReply().build(), now);
    engine.notifyEveryone(c, replyTo);
  }

  /** The stored form of an error reply. */
  static byte[] encode(ErrorReply error) {
    return (ATTEMPTS + error.attempts() + "\n" + CANCELLED + error.cancelled() + "\n\n"
        + error.reason()).getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Reads the stored form of the error reply to {@code requestId}; a form it cannot read (written
   * by something else) still gives an error reply, with the stored text as its reason.
   */
  static ErrorReply decode(long requestId, byte[] stored) {
    String text = stored == null ? "" : new String(stored, StandardCharsets.UTF_8);
    int attempts = 0;
    boolean cancelled = false;
    String reason = text;
    int blank = text.indexOf("\n\n");
    if (text.startsWith(ATTEMPTS) && blank > 0) {
      try {
        for (String line : text.substring(0, blank).split("\n")) {
          if (line.startsWith(ATTEMPTS)) {
            attempts = Integer.parseInt(line.substring(ATTEMPTS.length()));
          } else if (line.startsWith(CANCELLED)) {
            cancelled = Boolean.parseBoolean(line.substring(CANCELLED.length()));
          }
        }
        reason = text.substring(blank + 2);
      } catch (NumberFormatException e) {
        attempts = 0;
        reason = text;
      }
    }
    return new ErrorReply(Long.toString(requestId), reason, Math.max(0, attempts), cancelled);
  }
}
