package dev.tether.mailbox;

/**
 * The root of every failure a {@link Mailbox} or {@link Message} reports. Unchecked: callers catch
 * the subclasses they can act on.
 */
public class MailboxException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened, with which values, and what to do
   */
  public MailboxException(String message) {
    super(message);
  }

  /**
   * Creates the exception with its cause.
   *
   * @param message what happened, with which values, and what to do
   * @param cause the underlying failure
   */
  public MailboxException(String message, Throwable cause) {
    super(message, cause);
  }
}
