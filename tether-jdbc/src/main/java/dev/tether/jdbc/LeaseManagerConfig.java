package dev.tether.jdbc;

import java.time.Clock;
import java.time.Duration;
import java.util.Objects;

/**
 * Immutable options of a {@link LeaseManager}.
 *
 * @param clock the clock deciding instants and expiry, or null to use the store's (database clock
 *     on PostgreSQL, system clock on SQLite, unless the store was given one)
 * @param initialRetryBackoff delay before the retry after a first failed delivery; positive
 * @param maxRetryBackoff ceiling of the doubling backoff; at least {@code initialRetryBackoff}
 */
public record LeaseManagerConfig(Clock clock, Duration initialRetryBackoff, Duration maxRetryBackoff) {
  /** Default backoff after a first failed delivery. */
  public static final Duration DEFAULT_INITIAL_RETRY_BACKOFF = Duration.ofSeconds(1);

  /** Default backoff ceiling. */
  public static final Duration DEFAULT_MAX_RETRY_BACKOFF = Duration.ofMinutes(5);

  /**
   * Validates the configuration.
   *
   * @throws IllegalArgumentException naming the value and the rule
   */
  public LeaseManagerConfig {
    Objects.requireNonNull(initialRetryBackoff, "initialRetryBackoff");
    Objects.requireNonNull(maxRetryBackoff, "maxRetryBackoff");
    if (initialRetryBackoff.isNegative() || initialRetryBackoff.isZero()) {
      throw new IllegalArgumentException(
          "initialRetryBackoff must be positive, was " + initialRetryBackoff);
    }
    if (maxRetryBackoff.compareTo(initialRetryBackoff) < 0) {
      throw new IllegalArgumentException(
          "maxRetryBackoff (" + maxRetryBackoff + ") must be >= initialRetryBackoff ("
              + initialRetryBackoff + ")");
    }
  }

  /**
   * Returns the defaults: store clock, backoff 1 s doubling up to 5 min.
   *
   * @return the default configuration
   */
  public static LeaseManagerConfig defaults() {
    return new LeaseManagerConfig(null, DEFAULT_INITIAL_RETRY_BACKOFF, DEFAULT_MAX_RETRY_BACKOFF);
  }

  /**
   * Returns a copy using {@code clock}.
   *
   * @param clock the clock, or null for the store's
   * @return the copy
   */
  public LeaseManagerConfig withClock(Clock clock) {
    return new LeaseManagerConfig(clock, initialRetryBackoff, maxRetryBackoff);
  }

  /**
   * Returns a copy with another backoff.
   *
   * @param initial the first backoff
   * @param max the ceiling
   * @return the copy
   */
  public LeaseManagerConfig withRetryBackoff(Duration initial, Duration max) {
    return new LeaseManagerConfig(clock, initial, max);
  }

  Duration backoff(int deliveryCount) {
    int doublings = Math.max(0, deliveryCount - 1);
    if (doublings >= 62) {
      return maxRetryBackoff;
    }
    long factor = 1L << doublings;
    long millis = initialRetryBackoff.toMillis();
    if (millis > maxRetryBackoff.toMillis() / factor) {
      return maxRetryBackoff;
    }
    return Duration.ofMillis(millis * factor);
  }
}
