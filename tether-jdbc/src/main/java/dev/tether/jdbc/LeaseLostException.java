package dev.tether.jdbc;

/**
 * An operation named a lease token that no longer holds the work item: nothing was changed. The
 * subclass says why: {@link LeaseExpiredException} (the lease expired and the item was reclaimed,
 * handed back or deleted) or {@link LeaseConflictException} (another lease now holds it). A
 * worker receiving this must stop working on the item; another worker may already be running it.
 */
public abstract class LeaseLostException extends TetherStoreException {
  private static final long serialVersionUID = 1L;

  private final long itemId;
  private final long token;
  private final String currentStatus;
  private final String currentHolder;

  /**
   * Creates the exception.
   *
   * @param message what happened
   * @param itemId the work item
   * @param token the stale token the caller named
   * @param currentStatus the item's status now ({@code pending}, {@code in_progress}, ...), or
   *     null if the item no longer exists
   * @param currentHolder the worker holding the item now, or null
   */
  protected LeaseLostException(
      String message, long itemId, long token, String currentStatus, String currentHolder) {
    super(message);
    this.itemId = itemId;
    this.token = token;
    this.currentStatus = currentStatus;
    this.currentHolder = currentHolder;
  }

  /**
   * Returns the work item id.
   *
   * @return the id
   */
  public long itemId() {
    return itemId;
  }

  /**
   * Returns the stale token.
   *
   * @return the token the caller named
   */
  public long token() {
    return token;
  }

  /**
   * Returns the item's status when the operation was refused.
   *
   * @return the status name, or null if the item no longer exists
   */
  public String currentStatus() {
    return currentStatus;
  }

  /**
   * Returns the worker holding the item when the operation was refused.
   *
   * @return the holder, or null
   */
  public String currentHolder() {
    return currentHolder;
  }
}
