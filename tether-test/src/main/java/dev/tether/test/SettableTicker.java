package dev.tether.test;

import dev.tether.Ticker;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link Ticker} that moves only when a test moves it, for deterministic tests of rate limits
 * (lease extension), deadlines and stall detection (watchdog, readiness). Pass it to a {@link
 * dev.tether.Heartbeat}, a {@link dev.tether.loop.Deadline} or any Tether builder that takes a
 * {@code Ticker}.
 *
 * <p>Thread-safe: any thread may advance it while others read it, and every reader sees an advance
 * as soon as the advancing call returns. Like every ticker it is monotonic: it never goes back.
 * Advancing it wakes nobody: code that sleeps until a deadline looks at the ticker again on its own
 * schedule, so a test that advances past a deadline should wait for the effect (for example with
 * Awaitility) rather than expect it at once.
 */
public final class SettableTicker implements Ticker {
  /**
   * The reading of a ticker made with {@link #SettableTicker()}: an arbitrary non-zero origin, so
   * that code assuming readings start at zero fails its tests.
   */
  public static final long DEFAULT_START_NANOS = 1_000_000_000L;

  private final AtomicLong nanos;

  /** Creates a ticker reading {@link #DEFAULT_START_NANOS}. */
  public SettableTicker() {
    this(DEFAULT_START_NANOS);
  }

  /**
   * Creates a ticker reading {@code startNanos}; any value works, including negative ones and
   * values near {@link Long#MAX_VALUE} (readings are compared by difference, so they may wrap).
   *
   * @param startNanos the first reading
   */
  public SettableTicker(long startNanos) {
    this.nanos = new AtomicLong(startNanos);
  }

  /**
   * Returns the current reading.
   *
   * @return the start plus every advance so far, in nanoseconds
   */
  @Override
  public long read() {
    return nanos.get();
  }

  /**
   * Moves the ticker forward.
   *
   * @param amount how far; zero or more (a monotonic ticker never goes back)
   * @return this ticker
   * @throws NullPointerException if {@code amount} is null
   * @throws IllegalArgumentException if {@code amount} is negative
   * @throws ArithmeticException if {@code amount} is too long to count in nanoseconds (about 292
   *     years)
   */
  public SettableTicker advance(Duration amount) {
    Objects.requireNonNull(amount, "amount");
    if (amount.isNegative()) {
      throw new IllegalArgumentException(
          "a monotonic ticker cannot go back: advance(" + amount + ")");
    }
    nanos.addAndGet(amount.toNanos());
    return this;
  }

  @Override
  public String toString() {
    return "SettableTicker[" + nanos.get() + " ns]";
  }
}
