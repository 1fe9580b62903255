package dev.tether.test;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A wall {@link Clock} that moves only when a test moves it, for deterministic tests of anything
 * that persists or compares instants: message expiry, enqueue times, delayed deliveries. Pass it
 * wherever a Tether builder takes a {@code Clock}.
 *
 * <p>Thread-safe: any thread may move it while others read it, and every reader sees a move as soon
 * as the moving call returns. Clocks made by {@link #withZone} share this clock's reading. Unlike a
 * real wall clock it may be set or moved backwards, to test clock leaps. Moving it wakes nobody:
 * code that waits for an instant looks at the clock again on its own schedule.
 */
public final class SettableClock extends Clock {
  /** The reading of a clock made with {@link #SettableClock()}: 2026-01-01T00:00:00Z. */
  public static final Instant DEFAULT_START = Instant.parse("2026-01-01T00:00:00Z");

  private final AtomicReference<Instant> now;
  private final ZoneId zone;

  /** Creates a clock reading {@link #DEFAULT_START}, in UTC. */
  public SettableClock() {
    this(DEFAULT_START);
  }

  /**
   * Creates a clock reading {@code start}, in UTC.
   *
   * @param start the first reading
   * @throws NullPointerException if {@code start} is null
   */
  public SettableClock(Instant start) {
    this(new AtomicReference<>(Objects.requireNonNull(start, "start")), ZoneOffset.UTC);
  }

  private SettableClock(AtomicReference<Instant> now, ZoneId zone) {
    this.now = now;
    this.zone = zone;
  }

  /**
   * Returns the zone, UTC unless this clock was made by {@link #withZone}.
   *
   * @return the zone
   */
  @Override
  public ZoneId getZone() {
    return zone;
  }

  /**
   * Returns a clock in {@code newZone} that shares this clock's reading: moving either moves both.
   *
   * @param newZone the zone
   * @return the clock
   * @throws NullPointerException if {@code newZone} is null
   */
  @Override
  public Clock withZone(ZoneId newZone) {
    return new SettableClock(now, Objects.requireNonNull(newZone, "newZone"));
  }

  /**
   * Returns the current reading.
   *
   * @return the instant last set, or the start moved by every {@link #advance} since
   */
  @Override
  public Instant instant() {
    return now.get();
  }

  /**
   * Moves the clock by {@code amount}; a negative amount moves it back.
   *
   * @param amount how far
   * @return this clock
   * @throws NullPointerException if {@code amount} is null
   * @throws java.time.DateTimeException if the reading would leave the range of {@link Instant}
   */
  public SettableClock advance(Duration amount) {
    Objects.requireNonNull(amount, "amount");
    now.updateAndGet(i -> i.plus(amount));
    return this;
  }

  /**
   * Sets the clock to {@code instant}, earlier or later than its reading.
   *
   * @param instant the new reading
   * @return this clock
   * @throws NullPointerException if {@code instant} is null
   */
  public SettableClock set(Instant instant) {
    now.set(Objects.requireNonNull(instant, "instant"));
    return this;
  }

  @Override
  public String toString() {
    return "SettableClock[" + now.get() + ", " + zone + "]";
  }
}
