package dev.tether.jdbc;

/**
 * The database could not be reached (connection refused, pool exhausted, connection lost mid-transaction). Transient: retry with backoff. A write that failed this way was rolled back, unless the connection was lost during the commit itself, in which case it may or may not have taken effect.
 */
public class StoreUnavailableException extends TetherStoreException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened, with which values, and what to do
   */
  public StoreUnavailableException(String message) {
    super(message);
  }

  /**
   * Creates the exception with its cause.
   *
   * @param message what happened, with which values, and what to do
   * @param cause the underlying failure
   */
  public StoreUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
