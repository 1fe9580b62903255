package dev.tether.mailbox;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One delivery of an {@link InMemoryMailbox} entry; its identity is the receipt handle. Every
 * operation takes the mailbox's lock. Thread-safe.
 *
 * @param <T> the body type
 * @param <R> the reply body type
 */
final class InMemoryDelivery<T, R> implements Message<T, R> {
  private static final Logger log = LoggerFactory.getLogger(InMemoryMailbox.class);

  private final InMemoryMailbox<T, R> box;
  private final InMemoryMailbox<T, R>.Entry entry;
  private final String handle;
  private final int deliveryCount;
  private final int attempt;
  private final long requestedAt;
  /** Set when this delivery finalized the message. Guarded by the mailbox's lock. */
  private boolean finalized;

  InMemoryDelivery(InMemoryMailbox<T, R> box, InMemoryMailbox<T, R>.Entry entry, String handle,
      long requestedAt) {
    this.box = box;
    this.requestedAt = requestedAt;
    this.entry = entry;
    this.handle = handle;
    this.deliveryCount = entry.deliveryCount;
    this.attempt = entry.attempts;
  }

  @Override
  public String id() {
    return entry.id;
  }

  @Override
  public java.util.OptionalLong leaseRequestedAtNanos() {
    return java.util.OptionalLong.of(requestedAt);
  }

  @Override
  public T body() {
    if (entry.error != null) {
      throw new RequestFailedException(entry.error);
    }
    return entry.body;
  }

  @Override
  public String receiptHandle() {
    return handle;
  }

  @Override
  public int deliveryCount() {
    return deliveryCount;
  }

  @Override
  public int attempt() {
    return attempt;
  }

  @Override
  public int maxAttempts() {
    return box.maxAttempts;
  }

  @Override
  public Instant enqueuedAt() {
    return entry.enqueuedAt;
  }

  @Override
  public Optional<String> inReplyTo() {
    return Optional.ofNullable(entry.inReplyTo);
  }

  @Override
  public Optional<ErrorReply> errorReply() {
    return Optional.ofNullable(entry.error);
  }

  @Override
  public Optional<byte[]> lastCheckpoint() {
    box.lock.lock();
    try {
      return entry.checkpoint == null ? Optional.empty() : Optional.of(entry.checkpoint.clone());
    } finally {
      box.lock.unlock();
    }
  }

  @Override
  public void checkpoint(byte[] data) {
    Objects.requireNonNull(data, "data");
    if (data.length > Mailbox.MAX_CHECKPOINT_BYTES) {
      throw new InvalidParameterException("checkpoint of message " + entry.id + " in mailbox '"
          + box.name + "' is " + data.length + " bytes, over the limit of " + Mailbox.MAX_CHECKPOINT_BYTES
          + "; nothing was written: keep large state elsewhere and checkpoint a reference");
    }
    byte[] copy = data.clone();
    box.lock.lock();
    try {
      requireCurrent("checkpoint");
      entry.checkpoint = copy;
    } finally {
      box.lock.unlock();
    }
  }

  @Override
  public LeaseStatus checkLease() {
    box.lock.lock();
    try {
      if (finalized || entry.lease != this || box.byId.get(entry.id) != entry) {
        return LeaseStatus.LOST;
      }
      return box.clock.instant().isBefore(entry.visibleAt) ? LeaseStatus.HELD : LeaseStatus.EXPIRED;
    } finally {
      box.lock.unlock();
    }
  }

  @Override
  public boolean hasReplyTo() {
    return entry.replyTo != null;
  }

  @Override
  public void acknowledge() {
    box.lock.lock();
    try {
      awaitOwnReplySent();
      requireCurrent("acknowledge");
      remove();
      finalized = true;
    } finally {
      box.lock.unlock();
    }
  }

  @Override
  public void handBack() {
    box.lock.lock();
    try {
      awaitOwnReplySent();
      requireCurrent("handBack");
      entry.lease = null;
      entry.attempts--; // a worker's own hand-back is not charged
      entry.visibleAt = box.clock.instant();
      box.available.signalAll();
    } finally {
      box.lock.unlock();
    }
  }

  @Override
  public NackOutcome nack(Duration visibilityTimeout, String reason) {
    box.checkVisibility("nack visibilityTimeout", visibilityTimeout);
    InMemoryMailbox<T, R>.Burial burial = null;
    box.lock.lock();
    try {
      awaitOwnReplySent();
      requireCurrent("nack");
      if (entry.attempts >= box.maxAttempts) {
        remove();
        finalized = true;
        burial = box.bury(entry, "failed on attempt " + entry.attempts + " of " + box.maxAttempts
            + (reason == null ? "" : ": " + reason), box.clock.instant());
      } else {
        entry.lease = null;
        entry.visibleAt = box.clock.instant().plus(visibilityTimeout);
        box.available.signalAll();
      }
    } finally {
      box.lock.unlock();
    }
    if (burial == null) {
      return NackOutcome.RETRY_SCHEDULED;
    }
    log.warn("Mailbox '{}': message {} dead-lettered: {}", box.name, entry.id, burial.letter.reason());
    box.forward(List.of(burial));
    return NackOutcome.DEAD_LETTERED;
  }

  @Override
  public void extendVisibility(Duration timeout) {
    box.checkVisibility("extendVisibility timeout", timeout);
    box.lock.lock();
    try {
      // A reply in progress through this handle does not stop the lease from being extended.
      requireCurrent("extendVisibility");
      Instant requested = box.clock.instant().plus(timeout);
      if (requested.isAfter(entry.visibleAt)) {
        entry.visibleAt = requested;
      }
    } finally {
      box.lock.unlock();
    }
  }

  @Override
  public void deadLetter(String reason) {
    Objects.requireNonNull(reason, "reason");
    InMemoryMailbox<T, R>.Burial burial;
    box.lock.lock();
    try {
      awaitOwnReplySent();
      requireCurrent("deadLetter");
      remove();
      finalized = true;
      burial = box.bury(entry, reason, box.clock.instant());
    } finally {
      box.lock.unlock();
    }
    log.warn("Mailbox '{}': message {} dead-lettered: {}", box.name, entry.id, reason);
    box.forward(List.of(burial));
  }

  @Override
  public void reply(R body) {
    if (entry.replyTo == null) {
      throw new ReplyNotAvailableException(
          "message "
              + entry.id
              + " in mailbox '"
              + box.name
              + "' was sent without a reply-to mailbox; nothing sent. Use send(body, replyTo)"
              + " to make replies possible.");
    }
    Objects.requireNonNull(body, "body");
    pin("reply");
    try {
      entry.replyTo.sendReply(body, entry.id);
    } finally {
      unpin(false);
    }
  }

  @Override
  public void replyAndAcknowledge(R body) {
    if (entry.replyTo == null) {
      acknowledge();
      return;
    }
    Objects.requireNonNull(body, "body");
    pin("replyAndAcknowledge");
    boolean sent = false;
    try {
      entry.replyTo.sendReply(body, entry.id);
      sent = true;
    } finally {
      unpin(sent);
    }
  }

  /**
   * Reserves the entry for a reply send through this handle: until {@link #unpin}, nobody can
   * take it over and other finalizations through this handle wait.
   */
  private void pin(String operation) {
    box.lock.lock();
    try {
      awaitOwnReplySent();
      requireCurrent(operation);
      entry.pinnedBy = this;
    } finally {
      box.lock.unlock();
    }
  }

  private void unpin(boolean finalize) {
    box.lock.lock();
    try {
      entry.pinnedBy = null;
      if (finalize) {
        if (entry.lease == this) { // unless purged meanwhile
          remove();
        }
        finalized = true;
      }
      box.unpinned.signalAll();
      box.available.signalAll();
    } finally {
      box.lock.unlock();
    }
  }

  /** Waits while this very handle is sending a reply (another thread's call). Lock held. */
  private void awaitOwnReplySent() {
    while (entry.pinnedBy == this) {
      box.unpinned.awaitUninterruptibly();
    }
  }

  /** Throws unless this delivery holds the lease. Lock held. */
  private void requireCurrent(String operation) {
    if (finalized) {
      throw new MessageFinalizedException(
          operation
              + " refused: message "
              + entry.id
              + " in mailbox '"
              + box.name
              + "' was already finalized through receipt handle "
              + handle
              + "; nothing changed.");
    }
    if (entry.lease != this || box.byId.get(entry.id) != entry) {
      throw new ReceiptHandleExpiredException(
          operation
              + " refused: receipt handle "
              + handle
              + " (delivery "
              + deliveryCount
              + ") of message "
              + entry.id
              + " in mailbox '"
              + box.name
              + "' is stale: the message was delivered again, handed back, finalized or"
              + " purged; nothing changed. Stop working on it.");
    }
  }

  private void remove() {
    entry.lease = null;
    box.byId.remove(entry.id);
    box.bySequence.remove(entry.sequence);
  }

  @Override
  public String toString() {
    return "Message[id="
        + entry.id
        + ", mailbox='"
        + box.name
        + "', delivery="
        + deliveryCount
        + ", handle="
        + handle
        + "]";
  }
}
