package dev.tether.jdbc;

import java.util.List;

/**
 * A page of items from {@link OverviewQueries#page}.
 *
 * @param items the items, newest first, without checkpoints, with at most the first {@value
 *     OverviewQueries#INPUT_PREFIX_BYTES} bytes of their input, no output and at most {@value
 *     OverviewQueries#ERROR_PREFIX_CHARS} characters of their error
 * @param nextBeforeId the {@link ItemPageRequest#beforeId()} of the next (older) page, or null
 *     when there is none
 * @param searchIncomplete true when a text search stopped at {@link
 *     ItemPageRequest#TEXT_SCAN_ROWS} before filling the page: older items may match
 */
public record ItemPage(List<WorkItem> items, Long nextBeforeId, boolean searchIncomplete) {
  /** Copies the list. */
  public ItemPage {
    items = List.copyOf(items);
  }
}
