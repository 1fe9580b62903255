package dev.tether.cli.internal;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses the durations the command line accepts: {@code 500ms}, {@code 30s}, {@code 1.5s} (seconds
 * to the millisecond, as logs and messages print them), {@code 5m}, {@code 1h}, {@code 2d},
 * combinations such as {@code 1h30m}, and ISO-8601 ({@code PT30S}, {@code P1D}).
 * Stateless and thread-safe.
 */
public final class Durations {
  private static final Pattern PART = Pattern.compile("(\\d{1,12})(?:\\.(\\d{1,3}))?(ms|s|m|h|d)");

  /** The longest duration accepted: 100 years of days. */
  public static final Duration MAX = Duration.ofDays(36_500);

  private Durations() {}

  /**
   * Parses {@code text} as a non-negative duration.
   *
   * @param text the text, for example {@code 30s}, {@code 5m}, {@code 1h30m} or {@code PT30S}
   * @return the duration
   * @throws IllegalArgumentException if the text is not a duration, with a message naming the text
   *     and the accepted forms
   */
  public static Duration parse(String text) {
    if (text == null || text.isBlank()) {
      throw new IllegalArgumentException(
          "empty duration; use a number with a unit such as 30s, 5m, 1h or ISO-8601 like PT30S");
    }
    String t = text.trim();
    Duration d;
    if (t.regionMatches(true, 0, "P", 0, 1)) {
      try {
        d = Duration.parse(t.toUpperCase(Locale.ROOT));
      } catch (DateTimeParseException e) {
        throw invalid(text);
      }
    } else {
      Matcher m = PART.matcher(t.toLowerCase(Locale.ROOT));
      int at = 0;
      d = Duration.ZERO;
      while (at < t.length()) {
        if (!m.find(at) || m.start() != at) {
          throw invalid(text);
        }
        long n = Long.parseLong(m.group(1));
        String fraction = m.group(2);
        if (fraction != null && !m.group(3).equals("s")) {
          throw invalid(text); // a fraction only of seconds: 1.5s, not 1.5m
        }
        try {
          switch (m.group(3)) {
            case "ms":
              d = d.plusMillis(n);
              break;
            case "s":
              d = d.plusSeconds(n);
              if (fraction != null) {
                d = d.plusMillis(Long.parseLong((fraction + "00").substring(0, 3)));
              }
              break;
            case "m":
              d = d.plus(Duration.ofMinutes(n));
              break;
            case "h":
              d = d.plus(Duration.ofHours(n));
              break;
            default:
              d = d.plus(Duration.ofDays(n));
              break;
          }
        } catch (ArithmeticException e) {
          throw new IllegalArgumentException("duration '" + text + "' is too large");
        }
        at = m.end();
      }
    }
    if (d.compareTo(MAX) > 0) {
      throw new IllegalArgumentException(
          "duration '" + text + "' is too large; the maximum is " + MAX.toDays() + " days");
    }
    if (d.isNegative()) {
      throw new IllegalArgumentException("duration '" + text + "' is negative; use a value >= 0");
    }
    return d;
  }

  /**
   * Formats a duration compactly for people: {@code 850ms}, {@code 12.3s}, {@code 4m05s}, {@code
   * 2h10m}.
   *
   * @param d the duration, may be negative
   * @return the text
   */
  public static String human(Duration d) {
    if (d == null) {
      return "-";
    }
    String sign = d.isNegative() ? "-" : "";
    long ms = Math.abs(d.toMillis());
    if (ms < 1000) {
      return sign + ms + "ms";
    }
    if (ms < 60_000) {
      return sign + String.format(Locale.ROOT, "%.1fs", ms / 1000.0);
    }
    long s = ms / 1000;
    if (s < 3600) {
      return sign + String.format(Locale.ROOT, "%dm%02ds", s / 60, s % 60);
    }
    if (s < 86_400) {
      return sign + String.format(Locale.ROOT, "%dh%02dm", s / 3600, (s % 3600) / 60);
    }
    return sign + String.format(Locale.ROOT, "%dd%02dh", s / 86_400, (s % 86_400) / 3600);
  }

  private static IllegalArgumentException invalid(String text) {
    return new IllegalArgumentException(
        "invalid duration '"
            + text
            + "'; use a number with a unit (ms, s, m, h, d) such as 30s, 5m, 1h30m, or ISO-8601"
            + " such as PT30S");
  }
}
