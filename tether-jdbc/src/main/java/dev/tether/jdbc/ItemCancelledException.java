package dev.tether.jdbc;

/**
 * The work item was cancelled ({@link QueueAdmin#cancel}, {@link JdbcMailbox#cancel}): it will
 * never be delivered again, and nothing named through any lease token of it is accepted. Nothing
 * was changed; stop working on the item.
 */
public class ItemCancelledException extends LeaseLostException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened
   * @param itemId the work item
   * @param token the token the caller named
   */
  public ItemCancelledException(String message, long itemId, long token) {
    super(message, itemId, token, WorkStatus.CANCELLED.dbValue(), null);
  }
}
