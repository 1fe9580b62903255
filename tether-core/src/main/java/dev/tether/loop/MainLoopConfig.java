package dev.tether.loop;

import dev.tether.LeaseExtenderConfig;
import dev.tether.mailbox.DeadLetterPolicy;
import dev.tether.mailbox.Mailbox;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * The timeouts and policies of a {@link MainLoop}. Immutable; build with {@link #builder()}, whose
 * setters validate each value at once.
 *
 * <p>Defaults suit jobs of up to ten minutes: visibility timeout 30 min, long-poll wait 20 s, lease
 * extension every 60 s by 300 s, no per-message deadline, one message per receive, {@link
 * DeadLetterPolicy#defaults()}.
 */
public final class MainLoopConfig {
  /** Default visibility timeout of a received message: 30 min. */
  public static final Duration DEFAULT_VISIBILITY_TIMEOUT = Duration.ofMinutes(30);

  /** Default long-poll wait of one receive: 20 s. */
  public static final Duration DEFAULT_WAIT_TIME = Duration.ofSeconds(20);

  private final LeaseExtenderConfig leaseExtender;
  private final Duration visibilityTimeout;
  private final Duration waitTime;
  private final Duration deadline;
  private final Duration longestSilentCall;
  private final int maxMessages;
  private final DeadLetterPolicy deadLetterPolicy;

  private MainLoopConfig(Builder b) {
    this.leaseExtender = b.leaseExtender;
    this.visibilityTimeout = b.visibilityTimeout;
    this.waitTime = b.waitTime;
    this.deadline = b.deadline;
    this.longestSilentCall = b.longestSilentCall;
    this.maxMessages = b.maxMessages;
    this.deadLetterPolicy = b.deadLetterPolicy;
  }

  /**
   * Returns the default configuration.
   *
   * @return the defaults
   */
  public static MainLoopConfig defaults() {
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
   * Returns a builder starting from this configuration.
   *
   * @return a new builder
   */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.leaseExtender = leaseExtender;
    b.visibilityTimeout = visibilityTimeout;
    b.waitTime = waitTime;
    b.deadline = deadline;
    b.longestSilentCall = longestSilentCall;
    b.maxMessages = maxMessages;
    b.deadLetterPolicy = deadLetterPolicy;
    return b;
  }

  /**
   * Returns how leases are extended while a handler beats.
   *
   * @return the extender configuration
   */
  public LeaseExtenderConfig leaseExtender() {
    return leaseExtender;
  }

  /**
   * Returns the visibility timeout requested on receive.
   *
   * @return the timeout
   */
  public Duration visibilityTimeout() {
    return visibilityTimeout;
  }

  /**
   * Returns the long-poll wait of one receive.
   *
   * @return the wait
   */
  public Duration waitTime() {
    return waitTime;
  }

  /**
   * Returns the time budget of one message's handler, if any: the handler's context reports the
   * deadline; once it passes, beats no longer extend the lease and the loop interrupts the
   * handler's thread (the attempt then ends as a failure). It is also the longest processing time
   * the calibration rules use.
   *
   * @return the budget, or empty for none
   */
  public Optional<Duration> deadline() {
    return Optional.ofNullable(deadline);
  }

  /**
   * Returns the longest a handler may go without a beat, if declared: its longest call that
   * cannot beat while it runs, such as a non-streaming model call (client timeout times attempts,
   * plus backoff) or a tool that does not beat inside. The calibration rule {@link
   * Calibration#SILENT_CALL_WITHIN_LEASE} checks it against what the lease is sure to last after
   * a beat. Declaring it changes nothing at run time.
   *
   * @return the longest silent call, or empty when not declared (not checked)
   */
  public Optional<Duration> longestSilentCall() {
    return Optional.ofNullable(longestSilentCall);
  }

  /**
   * Returns the most messages one receive asks for.
   *
   * @return 1 to {@value Mailbox#MAX_MESSAGES_PER_RECEIVE}
   */
  public int maxMessages() {
    return maxMessages;
  }

  /**
   * Returns the policy applied when a handler fails.
   *
   * @return the policy
   */
  public DeadLetterPolicy deadLetterPolicy() {
    return deadLetterPolicy;
  }

  @Override
  public String toString() {
    return "MainLoopConfig[leaseExtender="
        + leaseExtender
        + ", visibilityTimeout="
        + dev.tether.DurationText.of(visibilityTimeout)
        + ", waitTime="
        + dev.tether.DurationText.of(waitTime)
        + ", deadline="
        + dev.tether.DurationText.of(deadline)
        + ", longestSilentCall="
        + (longestSilentCall == null ? "undeclared" : dev.tether.DurationText.of(longestSilentCall))
        + ", maxMessages="
        + maxMessages
        + ", deadLetterPolicy="
        + deadLetterPolicy
        + "]";
  }

  /** Builds a {@link MainLoopConfig}. Not thread-safe. */
  public static final class Builder {
    private LeaseExtenderConfig leaseExtender = LeaseExtenderConfig.defaults();
    private Duration visibilityTimeout = DEFAULT_VISIBILITY_TIMEOUT;
    private Duration waitTime = DEFAULT_WAIT_TIME;
    private Duration deadline;
    private Duration longestSilentCall;
    private int maxMessages = 1;
    private DeadLetterPolicy deadLetterPolicy = DeadLetterPolicy.defaults();

    private Builder() {}

    /**
     * Sets how leases are extended.
     *
     * @param config the extender configuration
     * @return this builder
     */
    public Builder leaseExtender(LeaseExtenderConfig config) {
      this.leaseExtender = Objects.requireNonNull(config, "config");
      return this;
    }

    /**
     * Sets the visibility timeout requested on receive.
     *
     * @param timeout positive, at most {@link Mailbox#MAX_VISIBILITY_TIMEOUT}
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder visibilityTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.isNegative()
          || timeout.isZero()
          || timeout.compareTo(Mailbox.MAX_VISIBILITY_TIMEOUT) > 0) {
        throw new IllegalArgumentException(
            "visibilityTimeout must be > 0 and <= "
                + Mailbox.MAX_VISIBILITY_TIMEOUT
                + ", was "
                + timeout);
      }
      this.visibilityTimeout = timeout;
      return this;
    }

    /**
     * Sets the long-poll wait of one receive.
     *
     * @param wait 0 to {@link Mailbox#MAX_WAIT_TIME}
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder waitTime(Duration wait) {
      Objects.requireNonNull(wait, "wait");
      if (wait.isNegative() || wait.compareTo(Mailbox.MAX_WAIT_TIME) > 0) {
        throw new IllegalArgumentException(
            "waitTime must be >= 0 and <= " + Mailbox.MAX_WAIT_TIME + ", was " + wait);
      }
      this.waitTime = wait;
      return this;
    }

    /**
     * Sets the time budget of one message's handler.
     *
     * @param budget positive, or null for none
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder deadline(Duration budget) {
      if (budget != null && (budget.isNegative() || budget.isZero())) {
        throw new IllegalArgumentException("deadline must be > 0, was " + budget);
      }
      this.deadline = budget;
      return this;
    }

    /**
     * Declares the longest a handler may go without a beat (a non-streaming model call, a tool
     * that does not beat inside), so that the loop's calibration checks that the lease outlasts
     * it ({@link Calibration#SILENT_CALL_WITHIN_LEASE}).
     *
     * @param longest positive, or null for undeclared
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder longestSilentCall(Duration longest) {
      if (longest != null && (longest.isNegative() || longest.isZero())) {
        throw new IllegalArgumentException("longestSilentCall must be > 0, was " + longest);
      }
      this.longestSilentCall = longest;
      return this;
    }

    /**
     * Sets the most messages one receive asks for.
     *
     * @param max 1 to {@value Mailbox#MAX_MESSAGES_PER_RECEIVE}
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder maxMessages(int max) {
      if (max < 1 || max > Mailbox.MAX_MESSAGES_PER_RECEIVE) {
        throw new IllegalArgumentException(
            "maxMessages must be 1.." + Mailbox.MAX_MESSAGES_PER_RECEIVE + ", was " + max);
      }
      this.maxMessages = max;
      return this;
    }

    /**
     * Sets the policy applied when a handler fails.
     *
     * @param policy the policy
     * @return this builder
     */
    public Builder deadLetterPolicy(DeadLetterPolicy policy) {
      this.deadLetterPolicy = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /**
     * Builds the configuration.
     *
     * @return the configuration
     * @throws IllegalArgumentException if the extension exceeds the visibility timeout ceiling
     */
    public MainLoopConfig build() {
      if (leaseExtender.extension().compareTo(Mailbox.MAX_VISIBILITY_TIMEOUT) > 0) {
        throw new IllegalArgumentException(
            "lease extension ("
                + leaseExtender.extension()
                + ") must be <= "
                + Mailbox.MAX_VISIBILITY_TIMEOUT);
      }
      return new MainLoopConfig(this);
    }
  }
}
