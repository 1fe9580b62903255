package dev.tether.jdbc;

import java.nio.charset.StandardCharsets;

/**
 * One page of {@link OverviewQueries#page}: items newest first (descending id), optionally of one
 * queue, one status, and whose payload contains a text, starting below an id (keyset paging: no
 * {@code OFFSET}, so page 1,000 costs what page 1 costs).
 *
 * <p>The text filter is a case-sensitive match of the text's UTF-8 bytes anywhere in the item's
 * input (for items enqueued by the CLI, the command's JSON). It is bounded: one request looks at
 * most {@link #TEXT_SCAN_ROWS} items (those that pass the other filters, newest first); when the
 * matches found among them do not fill the page, {@link ItemPage#nextBeforeId()} says where to
 * go on searching.
 *
 * @param queue only this queue, or null for every queue; not blank
 * @param status only this status, or null for every status
 * @param text only items whose input contains this text, or null; not empty, at most 200 chars
 * @param beforeId only items with a smaller id (the previous page's {@link ItemPage#nextBeforeId()}),
 *     or null for the newest
 * @param limit items on the page, 1 to {@value #MAX_LIMIT}
 */
public record ItemPageRequest(String queue, WorkStatus status, String text, Long beforeId, int limit) {
  /** Most items on one page: {@value}. */
  public static final int MAX_LIMIT = 200;

  /** Most items one text search looks at: {@value}. */
  public static final int TEXT_SCAN_ROWS = 2_000;

  /**
   * Validates the request.
   *
   * @throws IllegalArgumentException if a value is out of range
   */
  public ItemPageRequest {
    if (queue != null && queue.isBlank()) {
      throw new IllegalArgumentException("queue must be null (every queue) or not blank");
    }
    if (text != null && (text.isEmpty() || text.length() > 200)) {
      throw new IllegalArgumentException("text must be null or 1..200 characters, was " + text.length());
    }
    if (beforeId != null && beforeId < 1) {
      throw new IllegalArgumentException("beforeId must be positive, was " + beforeId);
    }
    if (limit < 1 || limit > MAX_LIMIT) {
      throw new IllegalArgumentException("limit must be in 1.." + MAX_LIMIT + ", was " + limit);
    }
  }

  /**
   * Returns the first page of every item, newest first.
   *
   * @param limit items on the page
   * @return the request
   */
  public static ItemPageRequest newest(int limit) {
    return new ItemPageRequest(null, null, null, null, limit);
  }

  /** The text's UTF-8 bytes, or null. */
  byte[] textBytes() {
    return text == null ? null : text.getBytes(StandardCharsets.UTF_8);
  }
}
