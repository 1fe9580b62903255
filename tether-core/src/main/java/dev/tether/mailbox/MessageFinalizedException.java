package dev.tether.mailbox;

/**
 * The message was already acknowledged, dead-lettered or replied-and-acknowledged through this receipt handle; a second finalization changes nothing.
 */
public class MessageFinalizedException extends MailboxException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened, with which values, and what to do
   */
  public MessageFinalizedException(String message) {
    super(message);
  }

  /**
   * Creates the exception with its cause.
   *
   * @param message what happened, with which values, and what to do
   * @param cause the underlying failure
   */
  public MessageFinalizedException(String message, Throwable cause) {
    super(message, cause);
  }
}
