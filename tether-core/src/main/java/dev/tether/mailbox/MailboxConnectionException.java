package dev.tether.mailbox;

/**
 * The backing store or broker could not be reached; the operation may or may not have taken effect only where the subclass's documentation says so. Transient: retry with backoff.
 */
public class MailboxConnectionException extends MailboxException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened, with which values, and what to do
   */
  public MailboxConnectionException(String message) {
    super(message);
  }

  /**
   * Creates the exception with its cause.
   *
   * @param message what happened, with which values, and what to do
   * @param cause the underlying failure
   */
  public MailboxConnectionException(String message, Throwable cause) {
    super(message, cause);
  }
}
