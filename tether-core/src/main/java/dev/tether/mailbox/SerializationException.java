package dev.tether.mailbox;

/**
 * A body could not be encoded or decoded by the mailbox's codec, or exceeds the maximum body size. Nothing was written.
 */
public class SerializationException extends MailboxException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened, with which values, and what to do
   */
  public SerializationException(String message) {
    super(message);
  }

  /**
   * Creates the exception with its cause.
   *
   * @param message what happened, with which values, and what to do
   * @param cause the underlying failure
   */
  public SerializationException(String message, Throwable cause) {
    super(message, cause);
  }
}
