package dev.tether.cli.internal;

import dev.tether.jdbc.AcquireRequest;
import dev.tether.jdbc.ItemFinalizedException;
import dev.tether.jdbc.Lease;
import dev.tether.jdbc.LeaseLostException;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.StoreUnavailableException;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreException;
import dev.tether.mailbox.InvalidParameterException;
import dev.tether.mailbox.Mailbox;
import dev.tether.mailbox.MailboxConnectionException;
import dev.tether.mailbox.MailboxException;
import dev.tether.mailbox.Message;
import dev.tether.mailbox.ReceiptHandleExpiredException;
import dev.tether.mailbox.ReplyNotAvailableException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A {@link Mailbox} over one queue of a {@link TetherStore}, through {@link LeaseManager}: receive
 * acquires leases, {@code extendVisibility} renews (never shortening), {@code replyAndAcknowledge}
 * completes with the result as output, {@code nack} after a {@linkplain #noteFailure noted
 * failure} releases as failed (the store's backoff and the item's own {@code max_attempts} decide
 * between retry and {@code failed}), a plain {@code nack} hands the item back (shutdown).
 *
 * <p>Why not {@code JdbcMailbox}: the CLI stores each command's result as the item's output and
 * each failure's one-line error with the item, and honours every item's own {@code max_attempts};
 * {@code JdbcMailbox} acknowledges without output and hands failures back without an error. Every
 * write here is one of {@link LeaseManager}'s token-checked operations.
 *
 * <p>Thread-safe. {@code receive} is {@link LeaseManager#acquire(AcquireRequest, Duration)}'s long
 * poll: woken at once by enqueues of this process and, on PostgreSQL, of any process (LISTEN /
 * NOTIFY); it returns early (empty) when its thread is interrupted, with the interrupt flag kept,
 * and within {@link #CLOSE_CHECK} of {@link #close()}.
 */
public final class StoreMailbox implements Mailbox<String, String> {
  /** Longest time a waiting receive takes to notice {@link #close()}. */
  static final Duration CLOSE_CHECK = Duration.ofMillis(200);

  private final TetherStore store;
  private final LeaseManager leases;
  private final String queue;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Map<String, String> failures = new ConcurrentHashMap<>();

  /**
   * Creates a mailbox on {@code queue}.
   *
   * @param store the store (not closed by this mailbox)
   * @param leases the lease manager of this worker
   * @param queue the queue
   */
  public StoreMailbox(TetherStore store, LeaseManager leases, String queue) {
    this.store = store;
    this.leases = leases;
    this.queue = queue;
  }

  @Override
  public String name() {
    return queue;
  }

  /**
   * Records why the delivery of {@code messageId} failed, so that the next {@code nack} of it
   * releases it as failed with this error (instead of handing it back).
   *
   * @param messageId the message id
   * @param error the one-line error
   */
  public void noteFailure(String messageId, String error) {
    failures.put(messageId, error);
  }

  @Override
  public String send(String body) {
    try {
      return Long.toString(leases.enqueue(NewWorkItem.builder(queue).input(body).build()));
    } catch (StoreUnavailableException e) {
      throw new MailboxConnectionException(e.getMessage(), e);
    }
  }

  @Override
  public String send(String body, Mailbox<String, ?> replyTo) {
    throw new InvalidParameterException(
        "StoreMailbox '" + queue + "' does not support reply-to mailboxes");
  }

  @Override
  public List<Message<String, String>> receive(
      int maxMessages, Duration visibilityTimeout, Duration waitTime) {
    if (maxMessages < 1 || maxMessages > MAX_MESSAGES_PER_RECEIVE) {
      throw new InvalidParameterException("maxMessages must be 1..10, was " + maxMessages);
    }
    AcquireRequest request = AcquireRequest.batch(queue, visibilityTimeout, maxMessages);
    long deadline = System.nanoTime() + Math.max(0, waitTime.toNanos());
    while (!closed.get()) {
      // Wait in slices so that close() is seen within CLOSE_CHECK; new items wake a slice at once.
      long left = Math.max(0, deadline - System.nanoTime());
      long slice = Math.min(left, CLOSE_CHECK.toNanos());
      List<Lease> got;
      try {
        got = leases.acquire(request, Duration.ofNanos(slice));
      } catch (TetherStoreException e) {
        throw new MailboxConnectionException(
            "cannot receive from queue '" + queue + "': " + e.getMessage(), e);
      }
      if (!got.isEmpty()) {
        List<Message<String, String>> out = new ArrayList<>(got.size());
        for (Lease l : got) {
          out.add(new StoreMessage(l));
        }
        return out;
      }
      if (left <= slice || Thread.currentThread().isInterrupted()) {
        break;
      }
    }
    return List.of();
  }

  @Override
  public long approximateCount() {
    return new QueueMonitor(store).pendingCount(queue);
  }

  @Override
  public long purge() {
    throw new InvalidParameterException(
        "StoreMailbox does not purge; use 'tether purge' to delete finished items");
  }

  /**
   * Returns {@link TetherStore#isAvailable()}: false from a store fault of any call on the store
   * (a receive, an acknowledgement, a renewal, the sweep) until a later call works, so that
   * readiness fails during a short database outage even when no receive failed.
   *
   * @return false while the store is known to be failing
   */
  @Override
  public boolean isAvailable() {
    return store.isAvailable();
  }

  @Override
  public void close() {
    closed.set(true);
  }

  private final class StoreMessage implements Message<String, String> {
    private final Lease lease;
    private final String id;

    StoreMessage(Lease lease) {
      this.lease = lease;
      this.id = Long.toString(lease.itemId());
    }

    @Override
    public String id() {
      return id;
    }

    @Override
    public String body() {
      return lease.inputAsString();
    }

    @Override
    public String receiptHandle() {
      return lease.itemId() + ":" + lease.token();
    }

    @Override
    public int deliveryCount() {
      return lease.deliveryCount();
    }

    @Override
    public Instant enqueuedAt() {
      return lease.createdAt();
    }

    @Override
    public boolean hasReplyTo() {
      return false;
    }

    @Override
    public void acknowledge() {
      replyAndAcknowledge(null);
    }

    @Override
    public void nack(Duration visibilityTimeout) {
      String error = failures.remove(id);
      try {
        if (error != null) {
          leases.release(lease.itemId(), lease.token(), false, null, error);
        } else {
          handBack(visibilityTimeout);
        }
      } catch (RuntimeException e) {
        throw translate(e);
      }
    }

    @Override
    public void extendVisibility(Duration timeout) {
      try {
        leases.renew(lease.itemId(), lease.token(), timeout);
      } catch (RuntimeException e) {
        throw translate(e);
      }
    }

    @Override
    public void reply(String body) {
      throw new ReplyNotAvailableException("item " + id + " has no reply-to mailbox");
    }

    @Override
    public void replyAndAcknowledge(String body) {
      failures.remove(id);
      try {
        leases.complete(
            lease.itemId(),
            lease.token(),
            body == null ? null : body.getBytes(StandardCharsets.UTF_8));
      } catch (RuntimeException e) {
        throw translate(e);
      }
    }

    /**
     * Releases the item as failed with {@code reason}: the item's own {@code max_attempts} decide
     * between a retry and {@code failed} (the store has no public dead-letter operation).
     */
    @Override
    public void deadLetter(String reason) {
      failures.remove(id);
      try {
        leases.release(lease.itemId(), lease.token(), false, null, reason);
      } catch (RuntimeException e) {
        throw translate(e);
      }
    }

    private void handBack(Duration delay) {
      leases.handBack(lease.itemId(), lease.token(), delay);
    }

    private MailboxException translate(RuntimeException e) {
      if (e instanceof MailboxException) {
        return (MailboxException) e;
      }
      if (e instanceof LeaseLostException || e instanceof ItemFinalizedException) {
        return new ReceiptHandleExpiredException(e.getMessage(), e);
      }
      if (e instanceof TetherStoreException) {
        return new MailboxConnectionException(e.getMessage(), e);
      }
      throw e;
    }

    @Override
    public String toString() {
      return "StoreMessage[" + id + ", delivery " + lease.deliveryCount() + "]";
    }
  }
}
