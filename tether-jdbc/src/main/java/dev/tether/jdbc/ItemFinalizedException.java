package dev.tether.jdbc;

/**
 * The item was already finalized ({@code completed} or {@code failed}) through the very lease the
 * caller names: a second release, acknowledgement or dead-lettering changes nothing.
 */
public class ItemFinalizedException extends TetherStoreException {
  private static final long serialVersionUID = 1L;

  private final long itemId;
  private final String status;

  /**
   * Creates the exception.
   *
   * @param itemId the work item
   * @param token the token that finalized it
   * @param status {@code completed} or {@code failed}
   */
  public ItemFinalizedException(long itemId, long token, String status) {
    super(
        "work item "
            + itemId
            + " was already finalized as '"
            + status
            + "' through lease token "
            + token
            + "; a second finalization changes nothing");
    this.itemId = itemId;
    this.status = status;
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
   * Returns the final status.
   *
   * @return {@code completed} or {@code failed}
   */
  public String status() {
    return status;
  }
}
