package dev.tether.mailbox;

/**
 * The message was cancelled: it will never be delivered again, and every operation through any
 * of its receipt handles is refused and changes nothing. A {@link ReceiptHandleExpiredException},
 * so code that stops on a lost lease stops on a cancellation too.
 */
public class MessageCancelledException extends ReceiptHandleExpiredException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened, with which values, and what to do
   */
  public MessageCancelledException(String message) {
    super(message);
  }

  /**
   * Creates the exception with its cause.
   *
   * @param message what happened, with which values, and what to do
   * @param cause the underlying failure
   */
  public MessageCancelledException(String message, Throwable cause) {
    super(message, cause);
  }
}
