package dev.tether.mailbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * Decides what happens to a message whose handler failed: hand it back with a backoff that grows
 * with the attempt, or dead-letter it now.
 *
 * <p>The message's own budget ({@link Message#maxAttempts()}) is the only budget: a policy can
 * dead-letter earlier, never later. The rules, in order: an error of a type listed by {@link
 * Builder#deadLetterOn} dead-letters at once; otherwise the message is dead-lettered when its
 * charged attempt has reached its budget (or the policy's own {@link Builder#maxAttempts cap},
 * when that is lower), and retried after {@link #backoff(int)} before that. Types match by {@code
 * instanceof}, so listing a type covers its subclasses.
 *
 * <p>Immutable and thread-safe.
 */
public final class DeadLetterPolicy {
  /** Default backoff after the first failed attempt. */
  public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofSeconds(1);

  /** Default ceiling of the backoff. */
  public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofMinutes(5);

  private final int maxAttempts;
  private final List<Class<? extends Throwable>> deadLetterOn;
  private final Duration initialBackoff;
  private final Duration maxBackoff;

  private DeadLetterPolicy(Builder b) {
    this.maxAttempts = b.maxAttempts;
    this.deadLetterOn = List.copyOf(b.deadLetterOn);
    this.initialBackoff = b.initialBackoff;
    this.maxBackoff = b.maxBackoff;
  }

  /**
   * Returns the default policy: the message's own budget, backoff from 1 s doubling up to 5 min,
   * no error type that dead-letters at once.
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
   * Returns the policy's cap on charged attempts, if one was set.
   *
   * @return the cap, or empty when only the message's own budget applies
   */
  public OptionalInt maxAttempts() {
    return maxAttempts == 0 ? OptionalInt.empty() : OptionalInt.of(maxAttempts);
  }

  /**
   * Decides the fate of a message whose charged attempt {@code attempt} (of {@code maxAttempts},
   * the message's budget) failed with {@code error}.
   *
   * @param attempt the failed attempt (first = 1)
   * @param maxAttempts the message's budget
   * @param error the handler's failure
   * @return the decision
   */
  public Decision decide(int attempt, int maxAttempts, Throwable error) {
    Objects.requireNonNull(error, "error");
    for (Class<? extends Throwable> type : deadLetterOn) {
      if (type.isInstance(error)) {
        return Decision.deadLetter("error " + error.getClass().getName()
            + " dead-letters at once, on attempt " + attempt + " of " + maxAttempts + ": " + error);
      }
    }
    int budget = this.maxAttempts == 0 ? maxAttempts : Math.min(maxAttempts, this.maxAttempts);
    if (attempt >= budget) {
      return Decision.deadLetter("failed on attempt " + attempt + " of " + budget + ": " + error);
    }
    return Decision.retry(backoff(attempt));
  }

  /**
   * Returns the delay before a message whose attempt {@code attempt} failed becomes visible
   * again: the initial backoff doubled for each earlier attempt, capped at the maximum.
   *
   * @param attempt the failed attempt (first = 1)
   * @return the delay
   */
  public Duration backoff(int attempt) {
    int doublings = Math.max(0, attempt - 1);
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
    return "DeadLetterPolicy[maxAttempts=" + (maxAttempts == 0 ? "the message's" : maxAttempts)
        + ", deadLetterOn=" + deadLetterOn + ", backoff=" + dev.tether.DurationText.of(initialBackoff) + ".." + dev.tether.DurationText.of(maxBackoff) + "]";
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

    /**
     * Returns a decision to retry.
     *
     * @param delay the visibility timeout of the nack
     * @return the decision
     */
    public static Decision retry(Duration delay) {
      return new Decision(false, delay, null);
    }

    /**
     * Returns a decision to dead-letter.
     *
     * @param reason why, for operators
     * @return the decision
     */
    public static Decision deadLetter(String reason) {
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
      return deadLetter ? "DeadLetter[" + reason + "]" : "Retry[after " + dev.tether.DurationText.of(delay) + "]";
    }
  }

  /** Builds a {@link DeadLetterPolicy}; each setter validates its value at once. Not thread-safe. */
  public static final class Builder {
    private int maxAttempts;
    private final List<Class<? extends Throwable>> deadLetterOn = new ArrayList<>();
    private Duration initialBackoff = DEFAULT_INITIAL_BACKOFF;
    private Duration maxBackoff = DEFAULT_MAX_BACKOFF;

    private Builder() {}

    /**
     * Caps the charged attempts of a failing message: it is dead-lettered once this many failed,
     * when its own budget is larger. A cap never extends a message's budget.
     *
     * @param maxAttempts at least 1
     * @return this builder
     * @throws IllegalArgumentException if {@code maxAttempts < 1}
     */
    public Builder maxAttempts(int maxAttempts) {
      if (maxAttempts < 1) {
        throw new IllegalArgumentException("maxAttempts must be >= 1, was " + maxAttempts);
      }
      this.maxAttempts = maxAttempts;
      return this;
    }

    /**
     * Adds an error type that dead-letters at once, whatever the attempt.
     *
     * @param type the type (subclasses match too)
     * @return this builder
     */
    public Builder deadLetterOn(Class<? extends Throwable> type) {
      deadLetterOn.add(Objects.requireNonNull(type, "type"));
      return this;
    }

    /**
     * Sets the backoff after the first failed attempt and its ceiling; each later failure
     * doubles it.
     *
     * @param initial positive
     * @param max at least {@code initial}, at most {@link Mailbox#MAX_VISIBILITY_TIMEOUT}
     * @return this builder
     * @throws IllegalArgumentException if {@code initial} is not positive, exceeds {@code max}, or
     *     {@code max} exceeds the longest visibility timeout
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
     */
    public DeadLetterPolicy build() {
      return new DeadLetterPolicy(this);
    }
  }
}
