package dev.tether.jdbc;

/**
 * The item is held by another lease (another token, usually another worker that took it over
 * after the caller's lease expired). Nothing was changed; stop working on the item.
 */
public class LeaseConflictException extends LeaseLostException {
  private static final long serialVersionUID = 1L;

  private final long currentToken;

  /**
   * Creates the exception.
   *
   * @param message what happened
   * @param itemId the work item
   * @param token the stale token
   * @param currentHolder the worker holding the item now
   * @param currentToken the token of the current lease
   */
  public LeaseConflictException(
      String message, long itemId, long token, String currentHolder, long currentToken) {
    super(message, itemId, token, "in_progress", currentHolder);
    this.currentToken = currentToken;
  }

  /**
   * Returns the token of the lease that holds the item now.
   *
   * @return the current token
   */
  public long currentToken() {
    return currentToken;
  }
}
