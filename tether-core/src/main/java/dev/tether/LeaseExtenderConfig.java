package dev.tether;

import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link LeaseExtender} extends leases: at most once per {@code interval}, each time to
 * {@code extension} from now, and only while {@code enabled}.
 *
 * <p>Validated on construction: {@code interval >= 0}, {@code extension > 0} and {@code interval <
 * extension} (otherwise the lease could expire between two extensions of a steadily beating
 * worker). The stricter calibration rule {@code interval < extension / 2} is checked when a loop
 * group is built.
 *
 * @param interval minimum time between two extensions of one lease (default 60 s)
 * @param extension how far from now each extension pushes the lease's expiry (default 300 s)
 * @param enabled whether to extend at all (default true)
 */
public record LeaseExtenderConfig(Duration interval, Duration extension, boolean enabled) {
  /** Default minimum time between extensions: 60 s. */
  public static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(60);

  /** Default extension: 300 s. */
  public static final Duration DEFAULT_EXTENSION = Duration.ofSeconds(300);

  /**
   * Validates the configuration.
   *
   * @param interval minimum time between two extensions; {@code >= 0}
   * @param extension how far from now each extension reaches; {@code > 0} and {@code > interval}
   * @param enabled whether to extend at all
   * @throws IllegalArgumentException naming the values, if a rule is violated
   */
  public LeaseExtenderConfig {
    Objects.requireNonNull(interval, "interval");
    Objects.requireNonNull(extension, "extension");
    if (interval.isNegative()) {
      throw new IllegalArgumentException("interval must be >= 0, was " + interval);
    }
    if (extension.isNegative() || extension.isZero()) {
      throw new IllegalArgumentException("extension must be > 0, was " + extension);
    }
    if (interval.compareTo(extension) >= 0) {
      throw new IllegalArgumentException(
          "interval (" + interval + ") must be < extension (" + extension + ")");
    }
  }

  /**
   * Returns an enabled configuration with the given interval and extension.
   *
   * @param interval minimum time between extensions
   * @param extension how far each extension reaches
   * @return the configuration
   * @throws IllegalArgumentException if a rule is violated
   */
  public static LeaseExtenderConfig of(Duration interval, Duration extension) {
    return new LeaseExtenderConfig(interval, extension, true);
  }

  /**
   * Returns the defaults: interval 60 s, extension 300 s, enabled.
   *
   * @return the default configuration
   */
  public static LeaseExtenderConfig defaults() {
    return new LeaseExtenderConfig(DEFAULT_INTERVAL, DEFAULT_EXTENSION, true);
  }

  /**
   * Returns a disabled configuration (for tests, or mailboxes without leases).
   *
   * @return a configuration that never extends
   */
  public static LeaseExtenderConfig disabled() {
    return new LeaseExtenderConfig(DEFAULT_INTERVAL, DEFAULT_EXTENSION, false);
  }

  /**
   * Returns a copy with another interval.
   *
   * @param newInterval the interval
   * @return the copy
   */
  public LeaseExtenderConfig withInterval(Duration newInterval) {
    return new LeaseExtenderConfig(newInterval, extension, enabled);
  }

  /**
   * Returns a copy with another extension.
   *
   * @param newExtension the extension
   * @return the copy
   */
  public LeaseExtenderConfig withExtension(Duration newExtension) {
    return new LeaseExtenderConfig(interval, newExtension, enabled);
  }

  /**
   * Returns the configuration with human durations, for logs.
   *
   * @return for example {@code LeaseExtenderConfig[interval=60s, extension=300s, enabled=true]}
   */
  @Override
  public String toString() {
    return "LeaseExtenderConfig[interval=" + DurationText.of(interval) + ", extension="
        + DurationText.of(extension) + ", enabled=" + enabled + "]";
  }
}
