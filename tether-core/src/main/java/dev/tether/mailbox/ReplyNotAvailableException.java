package dev.tether.mailbox;

/**
 * {@link Message#reply} was called on a message sent without a reply-to mailbox.
 */
public class ReplyNotAvailableException extends MailboxException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened, with which values, and what to do
   */
  public ReplyNotAvailableException(String message) {
    super(message);
  }

  /**
   * Creates the exception with its cause.
   *
   * @param message what happened, with which values, and what to do
   * @param cause the underlying failure
   */
  public ReplyNotAvailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
