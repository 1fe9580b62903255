package dev.tether;

/**
 * A monotonic time source in nanoseconds, used for rate limits, deadlines and stall detection.
 *
 * <p>Values are only meaningful as differences between two readings of the same ticker (like
 * {@link System#nanoTime()}); compare them with {@code a - b < 0}, never {@code a < b}. Persisted
 * instants use a wall {@link java.time.Clock} instead. Implementations must be thread-safe and
 * cheap: {@link Heartbeat#beat()} reads the ticker on every beat.
 */
@FunctionalInterface
public interface Ticker {

  /**
   * Returns the current reading in nanoseconds.
   *
   * @return nanoseconds since an arbitrary, fixed origin
   */
  long read();

  /**
   * Returns the ticker backed by {@link System#nanoTime()}.
   *
   * <p>While the clock is read in a tight loop (about a million readings a second, as when a
   * handler beats on every iteration of a fast loop), readings come from a cached {@code
   * System.nanoTime()} value that one daemon thread, {@code tether-clock}, refreshes every
   * millisecond; the thread starts on the first such loop and parks (no CPU) once readings slow
   * down. Cached readings lag by at most about a millisecond and never lead, so deadlines are never
   * early. Setting the system property {@code tether.clock.cache} to {@code false} turns the cache
   * off. For a cache you start and stop yourself, whatever the read rate, use {@link CoarseTicker}.
   *
   * @return the system ticker
   */
  static Ticker system() {
    return SystemTicker.INSTANCE;
  }
}

/** The system ticker; an enum so that the call site stays monomorphic and inlinable. */
enum SystemTicker implements Ticker {
  INSTANCE;

  @Override
  public long read() {
    return SystemClock.INSTANCE.read();
  }

  @Override
  public String toString() {
    return "Ticker.system()";
  }
}
