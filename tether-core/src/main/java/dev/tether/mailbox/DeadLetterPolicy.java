package dev.tether.mailbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Decides what happens to a message whose handler failed: hand it back with a backoff that grows
 * with the delivery count, or dead-letter it.
 *
 * <p>The rules, in order: an error of a type listed by {@link Builder#deadLetterOn} dead-letters at
 * once; an error of a type listed by {@link Builder#neverDeadLetterOn} is always retried; otherwise
 * the message is dead-lettered when its delivery count has reached {@link #maxDeliveries()}, and
 * retried after {@link #backoff(int)} before that. Types match by {@code instanceof}, so listing a
 * type covers its subclasses; a type in both lists is rejected when the policy is built.
 *
 * <p>Immutable and thread-safe.
 */
public final class DeadLetterPolicy {
  /** Default total deliveries before dead-lettering: {@value}. */
  public static final int DEFAULT_MAX_DELIVERIES = 5;

  /** Default backoff after the first failed delivery. */
  public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofSeconds(1);

  /** Default ceiling of the backoff. */
  public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofMinutes(5);

  private final int maxDeliveries;
  private final List<Class<? extends Throwable>> deadLetterOn;
  private final List<Class<? extends Throwable>> neverDeadLetterOn;
  private final Duration initialBackoff;
  private final Duration maxBackoff;

  private DeadLetterPolicy(Builder b) {
    this.maxDeliveries = b.maxDeliveries;
    this.deadLetterOn = List.copyOf(b.deadLetterOn);
    this.neverDeadLetterOn = List.copyOf(b.neverDeadLetterOn);
    this.initialBackoff = b.initialBackoff;
    this.maxBackoff = b.maxBackoff;
  }

  /**
   * Returns the default policy: {@value #DEFAULT_MAX_DELIVERIES} deliveries, backoff from 1 s
   * doubling up to 5 min, no special error types.
   *
   * @return the default policy
   */
  public static DeadLetterPolicy defaults() {
    return builder().build();
  }

  /**
   * Returns a builder starting from the defaults.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Returns the total number of deliveries after which a failing message is dead-lettered.
   *
   * @return at least 1
   */
  public int maxDeliveries() {
    return maxDeliveries;
  }

  /**
   * Decides the fate of a message whose delivery number {@code deliveryCount} failed with {@code
   * error}.
   *
   * @param deliveryCount the failed delivery's count (first = 1)
   * @param error the handler's failure
   * @return the decision
   */
  public Decision decide(int deliveryCount, Throwable error) {
    Objects.requireNonNull(error, "error");
    for (Class<? extends Throwable> type : deadLetterOn) {
      if (type.isInstance(error)) {
        return Decision.deadLetter(
            "error " + error.getClass().getName() + " dead-letters at once: " + error.getMessage());
      }
    }
    for (Class<? extends Throwable> type : neverDeadLetterOn) {
      if (type.isInstance(error)) {
        return Decision.retry(backoff(deliveryCount));
      }
    }
    if (deliveryCount >= maxDeliveries) {
      return Decision.deadLetter(
          "failed on delivery "
              + deliveryCount
              + " of "
              + maxDeliveries
              + ": "
              + error.getClass().getName()
              + ": "
              + error.getMessage());
    }
    return Decision.retry(backoff(deliveryCount));
  }

  /**
   * Returns the delay before a message whose delivery number {@code deliveryCount} failed becomes
   * visible again: the initial backoff doubled for each earlier delivery, capped at the maximum.
   *
   * @param deliveryCount the failed delivery's count (first = 1)
   * @return the delay
   */
  public Duration backoff(int deliveryCount) {
    int doublings = Math.max(0, deliveryCount - 1);
    if (doublings >= 62) {
      return maxBackoff;
    }
    long nanos = initialBackoff.toNanos();
    long factor = 1L << doublings;
    if (nanos > maxBackoff.toNanos() / factor) {
      return maxBackoff;
    }
    return Duration.ofNanos(nanos * factor);
  }

  @Override
  public String toString() {
    return "DeadLetterPolicy[maxDeliveries="
        + maxDeliveries
        + ", deadLetterOn="
        + deadLetterOn
        + ", neverDeadLetterOn="
        + neverDeadLetterOn
        + ", backoff="
        + initialBackoff
        + ".."
        + maxBackoff
        + "]";
  }

  /** What to do with a failed message. */
  public static final class Decision {
    private final boolean deadLetter;
    private final Duration delay;
    private final String reason;

    private Decision(boolean deadLetter, Duration delay, String reason) {
      this.deadLetter = deadLetter;
      this.delay = delay;
      this.reason = reason;
    }

    static Decision retry(Duration delay) {
      return new Decision(false, delay, null);
    }

    static Decision deadLetter(String reason) {
      return new Decision(true, Duration.ZERO, reason);
    }

    /**
     * Returns whether the message should be dead-lettered.
     *
     * @return true to dead-letter, false to retry after {@link #delay()}
     */
    public boolean isDeadLetter() {
      return deadLetter;
    }

    /**
     * Returns the visibility timeout for the nack when retrying.
     *
     * @return the delay; zero for a dead letter
     */
    public Duration delay() {
      return delay;
    }

    /**
     * Returns why the message is dead-lettered.
     *
     * @return the reason, or null when retrying
     */
    public String reason() {
      return reason;
    }

    @Override
    public String toString() {
      return deadLetter ? "DeadLetter[" + reason + "]" : "Retry[after " + delay + "]";
    }
  }

  /** Builds a {@link DeadLetterPolicy}; each setter validates its value at once. Not thread-safe. */
  public static final class Builder {
    private int maxDeliveries = DEFAULT_MAX_DELIVERIES;
    private final List<Class<? extends Throwable>> deadLetterOn = new ArrayList<>();
    private final List<Class<? extends Throwable>> neverDeadLetterOn = new ArrayList<>();
    private Duration initialBackoff = DEFAULT_INITIAL_BACKOFF;
    private Duration maxBackoff = DEFAULT_MAX_BACKOFF;

    private Builder() {}

    /**
     * Sets the total deliveries after which a failing message is dead-lettered.
     *
     * @param maxDeliveries at least 1
     * @return this builder
     * @throws IllegalArgumentException if {@code maxDeliveries < 1}
     */
    public Builder maxDeliveries(int maxDeliveries) {
      if (maxDeliveries < 1) {
        throw new IllegalArgumentException("maxDeliveries must be >= 1, was " + maxDeliveries);
      }
      this.maxDeliveries = maxDeliveries;
      return this;
    }

    /**
     * Adds an error type that dead-letters at once, whatever the delivery count.
     *
     * @param type the type (subclasses match too)
     * @return this builder
     */
    public Builder deadLetterOn(Class<? extends Throwable> type) {
      deadLetterOn.add(Objects.requireNonNull(type, "type"));
      return this;
    }

    /**
     * Adds an error type that is always retried, never dead-lettered.
     *
     * @param type the type (subclasses match too)
     * @return this builder
     */
    public Builder neverDeadLetterOn(Class<? extends Throwable> type) {
      neverDeadLetterOn.add(Objects.requireNonNull(type, "type"));
      return this;
    }

    /**
     * Sets the backoff after the first failed delivery and its ceiling; each later failure
     * doubles it.
     *
     * @param initial positive
     * @param max at least {@code initial}
     * @return this builder
     * @throws IllegalArgumentException if {@code initial} is not positive or exceeds {@code max}
     */
    public Builder backoff(Duration initial, Duration max) {
      Objects.requireNonNull(initial, "initial");
      Objects.requireNonNull(max, "max");
      if (initial.isNegative() || initial.isZero()) {
        throw new IllegalArgumentException("initial backoff must be positive, was " + initial);
      }
      if (max.compareTo(initial) < 0) {
        throw new IllegalArgumentException(
            "max backoff (" + max + ") must be >= initial backoff (" + initial + ")");
      }
      if (max.compareTo(Mailbox.MAX_VISIBILITY_TIMEOUT) > 0) {
        throw new IllegalArgumentException(
            "max backoff (" + max + ") must be <= " + Mailbox.MAX_VISIBILITY_TIMEOUT);
      }
      this.initialBackoff = initial;
      this.maxBackoff = max;
      return this;
    }

    /**
     * Builds the policy.
     *
     * @return the policy
     * @throws IllegalArgumentException if a type is listed both to dead-letter at once and never
     */
    public DeadLetterPolicy build() {
      for (Class<? extends Throwable> t : deadLetterOn) {
        if (neverDeadLetterOn.contains(t)) {
          throw new IllegalArgumentException(
              t.getName() + " is listed both in deadLetterOn and neverDeadLetterOn");
        }
      }
      return new DeadLetterPolicy(this);
    }
  }
}
