package dev.tether.mailbox;

/**
 * An argument is outside its documented range (for example more than 10 messages per receive, or a visibility timeout over 12 hours).
 */
public class InvalidParameterException extends MailboxException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened, with which values, and what to do
   */
  public InvalidParameterException(String message) {
    super(message);
  }

  /**
   * Creates the exception with its cause.
   *
   * @param message what happened, with which values, and what to do
   * @param cause the underlying failure
   */
  public InvalidParameterException(String message, Throwable cause) {
    super(message, cause);
  }
}
