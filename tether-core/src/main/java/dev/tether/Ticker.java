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
    return System.nanoTime();
  }
}
