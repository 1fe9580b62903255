package dev.tether.mailbox;

import java.time.Duration;
import java.util.Objects;

/**
 * The latest output of a running delivery: the end of what it wrote to its two streams, and how
 * long ago it last wrote and last beat. A handler that produces output reports it through {@link
 * Message#reportOutput}; a store that supports it carries it on the lease extensions it already
 * writes and keeps it with the delivery when that ends, whatever the ending (success, failure,
 * expiry, cancellation, hand-back), so the output of a hung or killed delivery survives it.
 * Immutable.
 *
 * @param stdout the end of the standard output (or the only stream), never null
 * @param stderr the end of the standard error, never null
 * @param bytes total bytes written to both streams so far; a store skips writing tails that did
 *     not change since the last report with the same count
 * @param sinceLastOutput time since the last output, or null when nothing was written yet
 * @param sinceLastBeat time since the delivery's heartbeat last beat, or null if unknown
 */
public record OutputTail(
    String stdout, String stderr, long bytes, Duration sinceLastOutput, Duration sinceLastBeat) {

  /** The longest tail of one stream a store keeps, in characters; longer tails keep their end. */
  public static final int MAX_CHARS = 4096;

  /**
   * Validates and bounds the tails.
   *
   * @param stdout the end of the standard output, never null
   * @param stderr the end of the standard error, never null
   * @param bytes total bytes written so far, >= 0
   * @param sinceLastOutput time since the last output, or null
   * @param sinceLastBeat time since the last beat, or null
   * @throws NullPointerException if a tail is null
   * @throws IllegalArgumentException if {@code bytes} is negative
   */
  public OutputTail {
    stdout = last(Objects.requireNonNull(stdout, "stdout"));
    stderr = last(Objects.requireNonNull(stderr, "stderr"));
    if (bytes < 0) {
      throw new IllegalArgumentException("bytes must be >= 0, was " + bytes);
    }
    sinceLastOutput = nonNegative(sinceLastOutput);
    sinceLastBeat = nonNegative(sinceLastBeat);
  }

  private static String last(String s) {
    if (s.length() <= MAX_CHARS) {
      return s;
    }
    int from = s.length() - MAX_CHARS;
    if (Character.isLowSurrogate(s.charAt(from))) {
      from++; // never split a surrogate pair
    }
    return s.substring(from);
  }

  private static Duration nonNegative(Duration d) {
    return d == null || !d.isNegative() ? d : Duration.ZERO;
  }
}
