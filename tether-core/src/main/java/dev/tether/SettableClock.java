package dev.tether;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A wall {@link Clock} that only moves when told to, for deterministic tests of anything that
 * persists or compares instants (message expiry, enqueue times).
 *
 * <p>Thread-safe. Unlike a real wall clock it may be set backwards, to test clock leaps.
 */
public final class SettableClock extends Clock {
  private final AtomicReference<Instant> now;
  private final ZoneId zone;

  /** Creates a clock reading 2026-01-01T00:00:00Z. */
  public SettableClock() {
    this(Instant.parse("2026-01-01T00:00:00Z"));
  }

  /**
   * Creates a clock reading {@code start}.
   *
   * @param start the first reading
   */
  public SettableClock(Instant start) {
    this(new AtomicReference<>(Objects.requireNonNull(start, "start")), ZoneOffset.UTC);
  }

  private SettableClock(AtomicReference<Instant> now, ZoneId zone) {
    this.now = now;
    this.zone = zone;
  }

  @Override
  public ZoneId getZone() {
    return zone;
  }

  @Override
  public Clock withZone(ZoneId newZone) {
    return new SettableClock(now, newZone);
  }

  @Override
  public Instant instant() {
    return now.get();
  }

  /**
   * Moves the clock by {@code amount} (negative moves it back).
   *
   * @param amount how far
   * @return this clock
   */
  public SettableClock advance(Duration amount) {
    Objects.requireNonNull(amount, "amount");
    now.updateAndGet(i -> i.plus(amount));
    return this;
  }

  /**
   * Sets the clock to {@code instant}.
   *
   * @param instant the new reading
   * @return this clock
   */
  public SettableClock set(Instant instant) {
    now.set(Objects.requireNonNull(instant, "instant"));
    return this;
  }
}
