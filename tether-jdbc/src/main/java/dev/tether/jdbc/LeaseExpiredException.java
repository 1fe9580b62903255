package dev.tether.jdbc;

/**
 * The lease expired and the item is no longer held through the caller's token: it was reclaimed
 * by the recovery sweep or a receiver (back to {@code pending}, or {@code failed} past its
 * attempts), handed back, redriven, or deleted. Nothing was changed; stop working on the item.
 */
public class LeaseExpiredException extends LeaseLostException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened
   * @param itemId the work item
   * @param token the stale token
   * @param currentStatus the item's status now, or null if it no longer exists
   * @param currentHolder the holder now, or null
   */
  public LeaseExpiredException(
      String message, long itemId, long token, String currentStatus, String currentHolder) {
    super(message, itemId, token, currentStatus, currentHolder);
  }
}
