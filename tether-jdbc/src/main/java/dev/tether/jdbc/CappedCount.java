package dev.tether.jdbc;

/**
 * A count that stops at a cap, so that counting costs at most the cap's index entries.
 *
 * @param count the count, at most the cap
 * @param capped true when there are more than {@code count} (show it as "1,000+")
 */
public record CappedCount(long count, boolean capped) {
  /**
   * Returns the sum of two counts, capped when either is.
   *
   * @param other the other count
   * @return the sum
   */
  public CappedCount plus(CappedCount other) {
    return new CappedCount(count + other.count, capped || other.capped);
  }
}
