package dev.tether;

import java.math.BigDecimal;
import java.time.Duration;

/**
 * Durations as people write them in logs and configuration: {@code 90s}, {@code 0.5s}, {@code
 * 720s}; whole milliseconds under a second as {@code 250ms}. Stateless.
 */
public final class DurationText {
  private DurationText() {}

  /**
   * Formats a duration in seconds ({@code 90s}, {@code 1.5s}), or in milliseconds when it is a
   * whole number of them under a second ({@code 250ms}).
   *
   * @param d the duration, or null
   * @return the text, {@code none} for null
   */
  public static String of(Duration d) {
    if (d == null) {
      return "none";
    }
    if (!d.isNegative() && d.compareTo(Duration.ofSeconds(1)) < 0 && d.getNano() % 1_000_000 == 0) {
      return d.toMillis() + "ms";
    }
    BigDecimal seconds = BigDecimal.valueOf(d.getSeconds()).add(BigDecimal.valueOf(d.getNano(), 9));
    return seconds.stripTrailingZeros().toPlainString() + "s";
  }
}
