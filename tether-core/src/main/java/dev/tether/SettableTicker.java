package dev.tether;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link Ticker} that only moves when told to, for deterministic tests of rate limits, deadlines
 * and stall detection.
 *
 * <p>Thread-safe: any thread may advance it while others read it.
 */
public final class SettableTicker implements Ticker {
  private final AtomicLong nanos;

  /** Creates a ticker reading an arbitrary non-zero origin, to catch code that assumes zero. */
  public SettableTicker() {
    this(1_000_000_000L);
  }

  /**
   * Creates a ticker reading {@code startNanos}.
   *
   * @param startNanos the first reading
   */
  public SettableTicker(long startNanos) {
    this.nanos = new AtomicLong(startNanos);
  }

  @Override
  public long read() {
    return nanos.get();
  }

  /**
   * Moves the ticker forward.
   *
   * @param amount how far; must not be negative (a monotonic ticker never goes back)
   * @return this ticker
   * @throws IllegalArgumentException if {@code amount} is negative
   */
  public SettableTicker advance(Duration amount) {
    Objects.requireNonNull(amount, "amount");
    if (amount.isNegative()) {
      throw new IllegalArgumentException("a monotonic ticker cannot go back: advance(" + amount + ")");
    }
    nanos.addAndGet(amount.toNanos());
    return this;
  }
}
