package dev.tether.cli.internal;

import dev.tether.jdbc.AcquireRequest;
import dev.tether.jdbc.ItemFinalizedException;
import dev.tether.jdbc.Lease;
import dev.tether.jdbc.LeaseLostException;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.StoreUnavailableException;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreException;
import dev.tether.jdbc.internal.Dialect;
import dev.tether.mailbox.InvalidParameterException;
import dev.tether.mailbox.Mailbox;
import dev.tether.mailbox.MailboxConnectionException;
import dev.tether.mailbox.MailboxException;
import dev.tether.mailbox.Message;
import dev.tether.mailbox.ReceiptHandleExpiredException;
import dev.tether.mailbox.ReplyNotAvailableException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
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
 * <p>Stopgap until {@code tether-jdbc}'s {@code JdbcMailbox} lands: hand-back and dead-letter are
 * written here as conditional updates on (id, token, state) with a checkpoint, as the store does.
 *
 * <p>Thread-safe. {@code receive} polls the store every {@link #POLL_INTERVAL} while waiting and
 * returns early (empty) when its thread is interrupted, with the interrupt flag kept.
 */
public final class StoreMailbox implements Mailbox<String, String> {
  /** How often a waiting receive polls the store. */
  public static final Duration POLL_INTERVAL = Duration.ofMillis(200);

  private final TetherStore store;
  private final LeaseManager leases;
  private final String queue;
  private final Dialect dialect;
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
    this.dialect =
        store.engine() == TetherStore.Engine.POSTGRESQL ? Dialect.POSTGRES : Dialect.SQLITE;
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
    long end = System.nanoTime() + waitTime.toNanos();
    while (!closed.get()) {
      List<Lease> got;
      try {
        got = leases.acquire(AcquireRequest.batch(queue, visibilityTimeout, maxMessages));
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
      long left = end - System.nanoTime();
      if (left <= 0) {
        break;
      }
      try {
        Thread.sleep(Math.max(1, Math.min(POLL_INTERVAL.toMillis(), left / 1_000_000)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    return List.of();
  }

  @Override
  public long approximateCount() {
    return Queries.countPending(store, queue);
  }

  @Override
  public long purge() {
    throw new InvalidParameterException(
        "StoreMailbox does not purge; use 'tether purge' to delete finished items");
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

    @Override
    public void deadLetter(String reason) {
      failures.remove(id);
      try {
        finish(
            "UPDATE work_items SET status = 'failed', lease_expires_at = NULL, error_message = ?,"
                + " completed_at = ?, updated_at = ? WHERE id = ? AND lease_token = ?"
                + " AND status = 'in_progress'",
            "dead_lettered",
            reason == null ? "dead-lettered" : reason,
            null);
      } catch (RuntimeException e) {
        throw translate(e);
      }
    }

    private void handBack(Duration delay) {
      finish(
          "UPDATE work_items SET status = 'pending', lease_holder = NULL, lease_token = NULL,"
              + " lease_expires_at = NULL, available_at = ?, updated_at = ? WHERE id = ?"
              + " AND lease_token = ? AND status = 'in_progress'",
          "nacked",
          "handed back, visible again after " + delay,
          delay);
    }

    private void finish(String update, String kind, String reason, Duration delay) {
      try (Connection c = store.dataSource().getConnection()) {
        boolean auto = c.getAutoCommit();
        c.setAutoCommit(false);
        try {
          Instant now = Dialect.truncate(Instant.now());
          int n;
          try (PreparedStatement ps = c.prepareStatement(update)) {
            int i = 1;
            if (delay == null) {
              ps.setString(i++, reason);
              dialect.setInstant(ps, i++, now);
            } else {
              dialect.setInstant(ps, i++, now.plus(delay));
            }
            dialect.setInstant(ps, i++, now);
            ps.setLong(i++, lease.itemId());
            ps.setLong(i, lease.token());
            n = ps.executeUpdate();
          }
          if (n != 1) {
            c.rollback();
            throw new ReceiptHandleExpiredException(
                "item " + id + " is no longer held by lease token " + lease.token());
          }
          try (PreparedStatement ps =
              c.prepareStatement(
                  "INSERT INTO work_item_checkpoints (item_id, kind, lease_holder, lease_token,"
                      + " delivery_count, heartbeat_at, reason, created_at)"
                      + " VALUES (?, ?, ?, ?, ?, NULL, ?, ?)")) {
            ps.setLong(1, lease.itemId());
            ps.setString(2, kind);
            ps.setString(3, lease.holder());
            ps.setLong(4, lease.token());
            ps.setInt(5, lease.deliveryCount());
            ps.setString(6, reason);
            dialect.setInstant(ps, 7, now);
            ps.executeUpdate();
          }
          c.commit();
        } catch (SQLException | RuntimeException e) {
          try {
            c.rollback();
          } catch (SQLException r) {
            e.addSuppressed(r);
          }
          throw e;
        } finally {
          c.setAutoCommit(auto);
        }
      } catch (SQLException e) {
        throw new MailboxConnectionException(
            "cannot update item " + id + " (" + kind + "): " + e.getMessage(), e);
      }
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
