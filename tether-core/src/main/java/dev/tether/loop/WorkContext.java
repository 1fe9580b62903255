package dev.tether.loop;

import dev.tether.Codec;
import dev.tether.Heartbeat;
import dev.tether.LeaseExtender;
import dev.tether.mailbox.LeaseStatus;
import dev.tether.mailbox.MessageCancelledException;
import dev.tether.mailbox.MessageFinalizedException;
import dev.tether.mailbox.Message;
import dev.tether.mailbox.ReceiptHandleExpiredException;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.IntConsumer;

/**
 * What a handler knows about the work it is doing and what it may do besides the work: beat its
 * heartbeat (proof of progress, which keeps the lease), record a progress checkpoint that the next
 * delivery resumes from, ask whether the lease still holds, and see whether it should stop early
 * because the lease was lost, the message was cancelled, the loop is shutting down or the deadline
 * passed.
 *
 * <p>Thread-safe; a handler may pass it to threads it starts so that their progress beats too.
 * {@link #beat()} and the {@code is...} signals are cheap (no I/O, no lock); {@link #checkpoint}
 * and {@link #checkLease()} block for one round trip to the mailbox's store.
 */
public final class WorkContext {
  private final Heartbeat heartbeat;
  private final Deadline deadline;
  private final String messageId;
  private final int deliveryCount;
  private final Message<?, ?> message;
  private final LeaseExtender.Attachment attachment;
  private final BooleanSupplier leaseLost;
  private final BooleanSupplier shutdownRequested;
  private final IntConsumer onCheckpoint;

  private WorkContext(Builder b) {
    this.heartbeat = b.heartbeat;
    this.deadline = b.deadline;
    this.messageId = b.messageId;
    this.deliveryCount = b.deliveryCount;
    this.message = b.message;
    this.attachment = b.attachment;
    this.leaseLost = b.leaseLost;
    this.shutdownRequested = b.shutdownRequested;
    this.onCheckpoint = b.onCheckpoint;
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
   * Returns the deadline of this work, if one was configured. When a loop's deadline passes, the
   * lease is no longer extended and the handler's thread is interrupted.
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
   * Returns the delivery count of the message being processed (first delivery = 1). It only grows,
   * so a handler that writes to another system (object storage, another database) can pass it as
   * a fencing number there, letting that system refuse a write from an older delivery.
   *
   * @return the delivery count, or 0 outside a message
   */
  public int deliveryCount() {
    return deliveryCount;
  }

  /**
   * Returns the charged attempt this delivery is (first = 1; see {@link Message#attempt()}).
   *
   * @return the attempt, or 0 when the context was built without a message
   */
  public int attempt() {
    return message == null ? 0 : message.attempt();
  }

  /**
   * Returns the message's budget of charged attempts.
   *
   * @return the budget, or 0 when the context was built without a message
   */
  public int maxAttempts() {
    return message == null ? 0 : message.maxAttempts();
  }

  /**
   * Returns the receipt handle of the message this context works on: what names its current
   * lease to the mailbox (for example, to hand the lease to a process the handler delegates the
   * work to). Treat it as a secret of this delivery.
   *
   * @return the handle, or empty when the context has no message object
   */
  public Optional<String> receiptHandle() {
    return message == null ? Optional.empty() : Optional.of(message.receiptHandle());
  }

  /**
   * Returns whether the lease on the message is lost: an extension or a checkpoint was refused,
   * {@link #checkLease()} found it gone, or it ran out (by this process's monotonic clock, counted
   * from the last extension the store confirmed) without a successful extension, so another
   * worker may own the message now and this worker's result may be refused. A handler should stop
   * early. Cheap: no I/O.
   *
   * @return true once the lease is known or presumed lost
   */
  public boolean isLeaseLost() {
    return leaseLost.getAsBoolean();
  }

  /**
   * Returns how long the lease surely still holds by this process's monotonic clock, counted from
   * the last extension the store confirmed (or the receive): once it is zero or less, {@link
   * #isLeaseLost()} is true. Work that needs time to stop (a process tree to kill) should start
   * stopping when this drops below that time, so that it is gone before the store can let another
   * worker take the message over. Cheap: no I/O.
   *
   * @return the time left, or empty when the context knows no bound (no message, a nested loop)
   */
  public Optional<Duration> leaseSurelyHeldFor() {
    return attachment == null ? Optional.empty() : attachment.leaseSurelyHeldFor();
  }

  /**
   * Returns whether the message was cancelled (learnt from a refused extension or checkpoint, or
   * from {@link #checkLease()}). A cancelled message is never delivered again; stop working on it.
   *
   * @return true once the cancellation is known
   */
  public boolean isCancelled() {
    return attachment != null && attachment.isCancelled();
  }

  /**
   * Returns whether the loop was asked to shut down. Long handlers may stop early; the message is
   * then handed back without charging the attempt.
   *
   * @return true once shutdown was requested
   */
  public boolean isShutdownRequested() {
    return shutdownRequested.getAsBoolean();
  }

  /**
   * Returns whether the work should stop: lease lost, cancelled, shutdown requested, or deadline
   * passed.
   *
   * @return true if any of those holds
   */
  public boolean shouldStop() {
    return isLeaseLost() || isCancelled() || isShutdownRequested()
        || (deadline != null && deadline.isExpired());
  }

  /**
   * Asks the mailbox whether this delivery still holds its lease, by the receipt handle and the
   * store's clock; a lease found lost, expired or cancelled makes {@link #isLeaseLost()} (and for
   * a cancellation {@link #isCancelled()}) true from then on. Blocks for one read of the store.
   *
   * @return the status
   * @throws IllegalStateException if the context was built without a message
   * @throws dev.tether.mailbox.MailboxConnectionException if the store cannot be reached
   */
  public LeaseStatus checkLease() {
    Message<?, ?> m = requireMessage("check the lease");
    LeaseStatus status = m.checkLease();
    if (status == LeaseStatus.CANCELLED) {
      markCancelled();
    } else if (!status.isHeld()) {
      markLost();
    }
    return status;
  }

  /**
   * Records a progress checkpoint of bytes; see {@link #checkpoint(Object, Codec)}.
   *
   * @param data the checkpoint, at most {@link dev.tether.mailbox.Mailbox#MAX_CHECKPOINT_BYTES}
   * @throws WorkStoppedException if the lease is lost or the message cancelled (nothing written)
   */
  public void checkpoint(byte[] data) {
    checkpoint(data, Codec.bytes());
  }

  /**
   * Records a progress checkpoint of text (UTF-8); see {@link #checkpoint(Object, Codec)}.
   *
   * @param text the checkpoint
   * @throws WorkStoppedException if the lease is lost or the message cancelled (nothing written)
   */
  public void checkpoint(String text) {
    checkpoint(text, Codec.utf8());
  }

  /**
   * Records the handler's progress so that the next delivery of the message resumes from it
   * instead of starting over: the value, encoded by {@code codec}, replaces the previous
   * checkpoint, fenced by this delivery's receipt handle, and is durable (as the mailbox is) when
   * this returns. A checkpoint is progress, so it also beats. Blocks for one round trip to the
   * store.
   *
   * @param value the progress (a cursor, a step, a partial result)
   * @param codec how to encode it
   * @param <C> the value type
   * @throws WorkStoppedException with {@link WorkStoppedException.Reason#LEASE_LOST} or {@link
   *     WorkStoppedException.Reason#CANCELLED} when the lease is gone: nothing was written and the
   *     handler should stop (a {@link MainLoop} leaves the message to its new owner)
   * @throws dev.tether.mailbox.InvalidParameterException if the encoded value is over {@link
   *     dev.tether.mailbox.Mailbox#MAX_CHECKPOINT_BYTES}
   * @throws IllegalArgumentException if the codec cannot encode the value
   * @throws IllegalStateException if the context was built without a message
   * @throws dev.tether.mailbox.MailboxConnectionException if the store cannot be reached (the
   *     checkpoint may be retried)
   */
  public <C> void checkpoint(C value, Codec<C> codec) {
    Objects.requireNonNull(value, "value");
    Objects.requireNonNull(codec, "codec");
    Message<?, ?> m = requireMessage("checkpoint");
    byte[] bytes;
    try {
      bytes = codec.encode(value);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("cannot encode the checkpoint of message " + m.id()
          + " with " + codec + ": " + e.getMessage() + "; nothing was written", e);
    }
    try {
      m.checkpoint(bytes);
    } catch (MessageCancelledException e) {
      markCancelled();
      throw new WorkStoppedException(WorkStoppedException.Reason.CANCELLED,
          "checkpoint refused: message " + m.id() + " was cancelled", e);
    } catch (ReceiptHandleExpiredException | MessageFinalizedException e) {
      markLost();
      throw new WorkStoppedException(WorkStoppedException.Reason.LEASE_LOST,
          "checkpoint refused: the lease on message " + m.id() + " (delivery " + deliveryCount
              + ") is lost", e);
    }
    onCheckpoint.accept(bytes.length);
    heartbeat.beat();
  }

  /**
   * Registers where this delivery's latest output comes from, so that its store can show it while
   * it runs and keep it when the delivery ends, however it ends ({@link Message#reportOutput}).
   * Does nothing without a message.
   *
   * @param source returns the current output; must be fast and not throw
   */
  public void reportOutput(java.util.function.Supplier<dev.tether.mailbox.OutputTail> source) {
    Objects.requireNonNull(source, "source");
    if (message != null) {
      message.reportOutput(source);
    }
  }

  /**
   * Writes the reported output now if it changed since it was last written, without extending
   * the lease ({@link Message#flushOutput}); for work that went quiet after output. Does nothing
   * without a message. A store failure is the caller's to log; the lease is not affected.
   */
  public void flushOutput() {
    if (message != null) {
      message.flushOutput();
    }
  }

  /**
   * Returns the latest checkpoint as bytes: the last one this delivery wrote, else the one an
   * earlier delivery left.
   *
   * @return the checkpoint, or empty on a fresh start (and outside a message)
   */
  public Optional<byte[]> lastCheckpoint() {
    return message == null ? Optional.empty() : message.lastCheckpoint();
  }

  /**
   * Returns the latest checkpoint decoded as UTF-8 text.
   *
   * @return the checkpoint, or empty on a fresh start
   * @throws IllegalArgumentException if the stored bytes are not valid UTF-8
   */
  public Optional<String> lastCheckpointAsString() {
    return lastCheckpoint(Codec.utf8());
  }

  /**
   * Returns the latest checkpoint decoded by {@code codec}.
   *
   * @param codec how to decode it
   * @param <C> the value type
   * @return the checkpoint, or empty on a fresh start
   * @throws IllegalArgumentException if the codec cannot decode the stored bytes
   */
  public <C> Optional<C> lastCheckpoint(Codec<C> codec) {
    Objects.requireNonNull(codec, "codec");
    Optional<byte[]> bytes = lastCheckpoint();
    if (bytes.isEmpty()) {
      return Optional.empty();
    }
    try {
      return Optional.of(codec.decode(bytes.get()));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("cannot decode the checkpoint of message " + messageId
          + " with " + codec + ": " + e.getMessage(), e);
    }
  }

  private Message<?, ?> requireMessage(String what) {
    if (message == null) {
      throw new IllegalStateException("cannot " + what + ": this context has no message"
          + (messageId == null ? "" : " object (message " + messageId + ")")
          + "; build it with WorkContext.Builder.attachment(...)");
    }
    return message;
  }

  private void markLost() {
    if (attachment != null) {
      attachment.markLeaseLost();
    }
  }

  private void markCancelled() {
    if (attachment != null) {
      attachment.markCancelled();
    }
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
    private Message<?, ?> message;
    private LeaseExtender.Attachment attachment;
    private BooleanSupplier leaseLost = () -> false;
    private BooleanSupplier shutdownRequested = () -> false;
    private IntConsumer onCheckpoint = bytes -> {};

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
     * Sets the id and delivery count of the message being processed, without the message itself
     * (a nested loop's context): {@link #checkpoint} and {@link #checkLease()} are then not
     * available.
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
     * Sets the delivery being processed through its lease-extender attachment: the message (for
     * checkpoints and lease checks) and the lease-lost and cancelled signals.
     *
     * @param attachment the attachment of the message to the heartbeat
     * @return this builder
     */
    public Builder attachment(LeaseExtender.Attachment attachment) {
      this.attachment = Objects.requireNonNull(attachment, "attachment");
      this.message = attachment.message();
      this.messageId = message.id();
      this.deliveryCount = message.deliveryCount();
      this.leaseLost = attachment::isLeaseLost;
      return this;
    }

    /**
     * Sets the lease-lost signal (replacing the attachment's, if one was set).
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

    /** Tells {@code listener} the size of each checkpoint written through the context. */
    Builder onCheckpoint(IntConsumer listener) {
      this.onCheckpoint = Objects.requireNonNull(listener, "listener");
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
