package dev.tether.mailbox;

/**
 * The receipt handle no longer names the current delivery: the visibility timeout passed and the message was delivered again, or it was finalized. Nothing was changed. Lease extension treats this as "lease lost"; a handler should stop early.
 */
public class ReceiptHandleExpiredException extends MailboxException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened, with which values, and what to do
   */
  public ReceiptHandleExpiredException(String message) {
    super(message);
  }

  /**
   * Creates the exception with its cause.
   *
   * @param message what happened, with which values, and what to do
   * @param cause the underlying failure
   */
  public ReceiptHandleExpiredException(String message, Throwable cause) {
    super(message, cause);
  }
}
