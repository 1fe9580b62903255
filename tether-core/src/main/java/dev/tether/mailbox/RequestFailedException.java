package dev.tether.mailbox;

import java.util.Objects;

/**
 * Thrown by {@link Message#body()} of an error reply: the request it answers ended without an
 * output (see {@link ErrorReply}). Check {@link Message#errorReply()} before reading the body to
 * tell an error from an output without an exception.
 */
public class RequestFailedException extends MailboxException {
  private static final long serialVersionUID = 1L;

  private final transient ErrorReply error;

  /**
   * Creates the exception.
   *
   * @param error the error reply
   */
  public RequestFailedException(ErrorReply error) {
    super("request " + Objects.requireNonNull(error, "error").requestId()
        + (error.cancelled() ? " was cancelled" : " failed after " + error.attempts() + " attempts")
        + ": " + error.reason());
    this.error = error;
  }

  /**
   * Returns the error reply.
   *
   * @return the error
   */
  public ErrorReply error() {
    return error;
  }
}
