package dev.tether.loop;

import dev.tether.Heartbeat;
import java.util.Objects;
import java.util.Optional;
import java.util.function.BooleanSupplier;

/**
 * What a handler knows about the work it is doing: the heartbeat to beat (the seeds'
 * {@code ToolContext.beat()}), its deadline, the delivery it is processing, and whether it should
 * stop early because the lease was lost or the loop is shutting down.
 *
 * <p>Immutable and thread-safe; a handler may pass it to threads it starts so that their progress
 * beats too.
 */
public final class WorkContext {
  private final Heartbeat heartbeat;
  private final Deadline deadline;
  private final String messageId;
  private final int deliveryCount;
  private final BooleanSupplier leaseLost;
  private final BooleanSupplier shutdownRequested;

  private WorkContext(Builder b) {
    this.heartbeat = b.heartbeat;
    this.deadline = b.deadline;
    this.messageId = b.messageId;
    this.deliveryCount = b.deliveryCount;
    this.leaseLost = b.leaseLost;
    this.shutdownRequested = b.shutdownRequested;
  }

  /**
   * Returns a builder for a context around {@code heartbeat}.
   *
   * @param heartbeat the heartbeat whose beats prove progress
   * @return a new builder
   */
  public static Builder builder(Heartbeat heartbeat) {
    return new Builder(heartbeat);
  }

  /**
   * Returns a context with only a heartbeat: no deadline, no message, never lease-lost.
   *
   * @param heartbeat the heartbeat
   * @return the context
   */
  public static WorkContext of(Heartbeat heartbeat) {
    return builder(heartbeat).build();
  }

  /**
   * Records progress: beats the heartbeat, which may extend the lease of the message being worked
   * on. Cheap enough to call on every step of real work; do not call it from a timer (a beat must
   * mean progress).
   */
  public void beat() {
    heartbeat.beat();
  }

  /**
   * Returns the heartbeat, to hand to nested loops whose beats should extend this lease.
   *
   * @return the heartbeat
   */
  public Heartbeat heartbeat() {
    return heartbeat;
  }

  /**
   * Returns the deadline of this work, if one was configured.
   *
   * @return the deadline, or empty
   */
  public Optional<Deadline> deadline() {
    return Optional.ofNullable(deadline);
  }

  /**
   * Returns the id of the message being processed.
   *
   * @return the id, or empty outside a message (a nested {@code execute})
   */
  public Optional<String> messageId() {
    return Optional.ofNullable(messageId);
  }

  /**
   * Returns the delivery count of the message being processed (first delivery = 1).
   *
   * @return the delivery count, or 0 outside a message
   */
  public int deliveryCount() {
    return deliveryCount;
  }

  /**
   * Returns whether the lease on the message was lost: another worker may now own it and this
   * worker's result will be refused. A handler should stop early.
   *
   * @return true once a lease extension found the receipt handle expired
   */
  public boolean isLeaseLost() {
    return leaseLost.getAsBoolean();
  }

  /**
   * Returns whether the loop was asked to shut down. Long handlers may stop early; the message is
   * then handed back or redelivered.
   *
   * @return true once shutdown was requested
   */
  public boolean isShutdownRequested() {
    return shutdownRequested.getAsBoolean();
  }

  /**
   * Returns whether the work should stop: lease lost, shutdown requested, or deadline passed.
   *
   * @return true if any of those holds
   */
  public boolean shouldStop() {
    return isLeaseLost() || isShutdownRequested() || (deadline != null && deadline.isExpired());
  }

  @Override
  public String toString() {
    return "WorkContext[message="
        + messageId
        + ", delivery="
        + deliveryCount
        + ", deadline="
        + deadline
        + ", leaseLost="
        + isLeaseLost()
        + "]";
  }

  /** Builds a {@link WorkContext}. Not thread-safe. */
  public static final class Builder {
    private final Heartbeat heartbeat;
    private Deadline deadline;
    private String messageId;
    private int deliveryCount;
    private BooleanSupplier leaseLost = () -> false;
    private BooleanSupplier shutdownRequested = () -> false;

    private Builder(Heartbeat heartbeat) {
      this.heartbeat = Objects.requireNonNull(heartbeat, "heartbeat");
    }

    /**
     * Sets the deadline.
     *
     * @param deadline the deadline, or null for none
     * @return this builder
     */
    public Builder deadline(Deadline deadline) {
      this.deadline = deadline;
      return this;
    }

    /**
     * Sets the message being processed.
     *
     * @param id the message id
     * @param deliveryCount its delivery count, at least 1
     * @return this builder
     * @throws IllegalArgumentException if {@code deliveryCount < 1}
     */
    public Builder message(String id, int deliveryCount) {
      if (deliveryCount < 1) {
        throw new IllegalArgumentException("deliveryCount must be >= 1, was " + deliveryCount);
      }
      this.messageId = Objects.requireNonNull(id, "id");
      this.deliveryCount = deliveryCount;
      return this;
    }

    /**
     * Sets the lease-lost signal.
     *
     * @param signal true once the lease is lost
     * @return this builder
     */
    public Builder leaseLost(BooleanSupplier signal) {
      this.leaseLost = Objects.requireNonNull(signal, "signal");
      return this;
    }

    /**
     * Sets the shutdown signal.
     *
     * @param signal true once shutdown was requested
     * @return this builder
     */
    public Builder shutdownRequested(BooleanSupplier signal) {
      this.shutdownRequested = Objects.requireNonNull(signal, "signal");
      return this;
    }

    /**
     * Builds the context.
     *
     * @return the context
     */
    public WorkContext build() {
      return new WorkContext(this);
    }
  }
}
