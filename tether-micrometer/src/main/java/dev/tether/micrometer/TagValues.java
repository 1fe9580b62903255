package dev.tether.micrometer;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Keeps the values of one tag bounded: either a fixed set given by configuration (anything else
 * becomes {@link TetherMetrics#OTHER}), or the first {@code max} distinct values seen (later new
 * values become {@link TetherMetrics#OTHER}). Thread-safe; an admitted value is looked up without
 * a lock.
 */
final class TagValues {
  private final Set<String> fixed; // null: admit the first max values seen
  private final int max;
  private final Set<String> admitted = ConcurrentHashMap.newKeySet();

  private TagValues(Set<String> fixed, int max) {
    this.fixed = fixed;
    this.max = max;
  }

  static TagValues fixed(Set<String> values) {
    return new TagValues(Set.copyOf(values), values.size());
  }

  static TagValues firstSeen(int max) {
    return new TagValues(null, max);
  }

  /** The tag value for {@code value}: itself when admitted, {@code none} for null, else other. */
  String of(String value) {
    if (value == null || value.isEmpty()) {
      return TetherMetrics.NONE;
    }
    if (fixed != null) {
      return fixed.contains(value) ? value : TetherMetrics.OTHER;
    }
    if (admitted.contains(value)) {
      return value;
    }
    synchronized (admitted) {
      if (admitted.contains(value)) {
        return value;
      }
      if (admitted.size() < max) {
        admitted.add(value);
        return value;
      }
    }
    return TetherMetrics.OTHER;
  }
}
