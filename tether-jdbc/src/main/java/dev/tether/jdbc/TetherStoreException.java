package dev.tether.jdbc;

/**
 * The root of every failure reported by the Tether JDBC store. Unchecked: callers catch the subclasses they can act on ({@link LeaseLostException}, {@link StoreUnavailableException}, ...).
 */
public class TetherStoreException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened, with which values, and what to do
   */
  public TetherStoreException(String message) {
    super(message);
  }

  /**
   * Creates the exception with its cause.
   *
   * @param message what happened, with which values, and what to do
   * @param cause the underlying failure
   */
  public TetherStoreException(String message, Throwable cause) {
    super(message, cause);
  }
}
