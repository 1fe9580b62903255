package dev.tether.loop;

import dev.tether.Ticker;
import java.time.Duration;
import java.util.Objects;

/**
 * A point in monotonic time by which work should be done. Immutable and thread-safe.
 *
 * <p>A deadline is advisory: nothing interrupts work that overruns it. Handlers and inner loops
 * check {@link #isExpired()} or {@link #remaining()} and stop early.
 */
public final class Deadline {
  private final Ticker ticker;
  private final long deadlineNanos;

  private Deadline(Ticker ticker, long deadlineNanos) {
    this.ticker = ticker;
    this.deadlineNanos = deadlineNanos;
  }

  /**
   * Returns a deadline {@code budget} from now on {@code ticker}.
   *
   * @param budget the time allowed; not negative
   * @param ticker the monotonic clock
   * @return the deadline
   * @throws IllegalArgumentException if {@code budget} is negative
   */
  public static Deadline after(Duration budget, Ticker ticker) {
    Objects.requireNonNull(budget, "budget");
    Objects.requireNonNull(ticker, "ticker");
    if (budget.isNegative()) {
      throw new IllegalArgumentException("deadline budget must be >= 0, was " + budget);
    }
    long nanos = saturatedNanos(budget);
    return new Deadline(ticker, ticker.read() + nanos);
  }

  private static long saturatedNanos(Duration d) {
    try {
      return d.toNanos();
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE / 4; // about 73 years: effectively never
    }
  }

  /**
   * Returns the time left, zero once expired.
   *
   * @return the remaining time, never negative
   */
  public Duration remaining() {
    return Duration.ofNanos(Math.max(0L, deadlineNanos - ticker.read()));
  }

  /**
   * Returns whether the deadline has passed.
   *
   * @return true once the ticker reached the deadline
   */
  public boolean isExpired() {
    return deadlineNanos - ticker.read() <= 0;
  }

  /**
   * Returns the deadline as a reading of its ticker.
   *
   * @return the ticker reading at which the deadline expires
   */
  public long nanos() {
    return deadlineNanos;
  }

  /**
   * Returns the earlier of this deadline and {@code other} (which must use the same ticker).
   *
   * @param other another deadline
   * @return the earlier one
   */
  public Deadline min(Deadline other) {
    return other.deadlineNanos - deadlineNanos < 0 ? other : this;
  }

  @Override
  public String toString() {
    return "Deadline[remaining=" + remaining() + "]";
  }
}
