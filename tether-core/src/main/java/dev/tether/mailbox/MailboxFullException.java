package dev.tether.mailbox;

/**
 * The mailbox holds its maximum number of messages; the message was not sent. Retry later or raise the bound.
 */
public class MailboxFullException extends MailboxException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened, with which values, and what to do
   */
  public MailboxFullException(String message) {
    super(message);
  }

  /**
   * Creates the exception with its cause.
   *
   * @param message what happened, with which values, and what to do
   * @param cause the underlying failure
   */
  public MailboxFullException(String message, Throwable cause) {
    super(message, cause);
  }
}
