package dev.tether.jdbc;

import dev.tether.Codec;
import dev.tether.QueueName;
import dev.tether.mailbox.ErrorReply;
import dev.tether.mailbox.InvalidParameterException;
import dev.tether.mailbox.LeaseStatus;
import dev.tether.mailbox.Mailbox;
import dev.tether.mailbox.MailboxConnectionException;
import dev.tether.mailbox.MailboxException;
import dev.tether.mailbox.MailboxFullException;
import dev.tether.mailbox.Message;
import dev.tether.mailbox.MessageCancelledException;
import dev.tether.mailbox.MessageFinalizedException;
import dev.tether.mailbox.NackOutcome;
import dev.tether.mailbox.OutputTail;
import dev.tether.mailbox.ReceiptHandleExpiredException;
import dev.tether.mailbox.ReplyNotAvailableException;
import dev.tether.mailbox.RequestFailedException;
import dev.tether.mailbox.SerializationException;
import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A durable {@link Mailbox} over one queue of a {@link TetherStore}, built on the store's lease
 * API: every operation goes through a {@link LeaseManager} (the same path a worker that leases
 * items directly takes), so the two can never disagree. A receive is a lease acquisition
 * (visibility timeout = lease duration; expired leases are redelivered or dead-lettered at once),
 * the receipt handle names the item and its lease token, and every operation through a message is
 * a token-checked conditional update: {@code extendVisibility} renews (never shortens), {@code
 * acknowledge} completes (with the result as the item's output when {@link
 * Builder#keepResults(boolean)} is on), {@code nack} ends the attempt as failed (charged) with its
 * reason, {@code handBack} returns it uncharged, {@code deadLetter} fails the item with the
 * reason, {@code checkpoint} records progress, and {@code replyAndAcknowledge} inserts the reply
 * into the reply-to queue and completes the item in one transaction.
 *
 * <p>Each item carries its own budget ({@code max_attempts}): messages sent through this mailbox
 * get {@link Builder#maxAttempts(int)}; items enqueued otherwise keep theirs. Dead letters stay in
 * the table as {@code failed} items (see {@link #deadLetteredIds()}, {@link QueueMonitor}, {@link
 * LeaseManager#redrive}); a dead-lettered or cancelled request with a reply-to sends its requester
 * an {@link ErrorReply} in the same transaction.
 *
 * <p>Errors: a stale handle throws {@link ReceiptHandleExpiredException} ({@link
 * MessageCancelledException} for a cancelled message), a second finalization {@link
 * MessageFinalizedException}, an unreachable database {@link MailboxConnectionException}, an
 * unencodable or oversized body {@link SerializationException} (nothing written). A stored body
 * that cannot be decoded is dead-lettered when it is received, never handed to a handler.
 *
 * <p><b>Acknowledgement modes.</b> By default every acknowledgement is durable when {@code
 * acknowledge()} (or {@code replyAndAcknowledge}) returns. For queues of short items, {@link
 * Builder#deferredAcknowledgements(int, Duration)} turns on <i>deferred acknowledgements</i>: the
 * call returns once the completion is queued, and queued completions commit in groups, each
 * still a conditional update on (id, lease token, status), at the latest when {@code maxBatch}
 * are queued or the oldest has waited {@code maxDelay} (usually sooner: a receive's acquisition
 * carries them in its own statement). The price: a crash (or a process killed before {@link
 * #close()} or {@link #flushAcknowledgements()}) loses the acknowledgements still queued, at most
 * about one batch, and their already-finished messages are delivered again when their leases
 * expire (at-least-once, as before); a stale acknowledgement can no longer be thrown to its
 * caller and is logged and counted instead ({@link #deferredAcknowledgementsRefused()}).
 *
 * <p>Thread-safe. {@link #receive} long-polls the database, woken at once by sends in this
 * process and, on PostgreSQL with notifications on, by other processes' sends (see {@link
 * TetherStore#defaultPollInterval()}); {@link #close()} wakes waiting receivers at once. Closing
 * the mailbox does not close the store.
 *
 * @param <T> the body type
 * @param <R> the reply body type
 */
public final class JdbcMailbox<T, R> implements Mailbox<T, R> {
  private static final Logger LOG = LoggerFactory.getLogger(JdbcMailbox.class);

  /**
   * With {@link Builder#deferredAcknowledgements deferred acknowledgements}, the shortest
   * visibility timeout a receive accepts, in multiples of the mode's {@code maxDelay}: a queued
   * acknowledgement commits well before its lease can expire.
   */
  public static final int MIN_LEASE_PER_DELAY = 10;

  /** Largest {@code maxBatch} of {@link Builder#deferredAcknowledgements}: one group's size. */
  public static final int MAX_DEFERRED_BATCH = GroupCommitter.MAX_GROUP;

  /** Longest {@code maxDelay} of {@link Builder#deferredAcknowledgements}. */
  public static final Duration MAX_DEFERRED_DELAY = Duration.ofSeconds(1);

  /** Default largest encoded body: 256 KiB, as in SQS. */
  public static final int DEFAULT_MAX_BODY_BYTES = 256 * 1024;

  private final TetherStore store;
  private final String queue;
  private final Codec<T> bodyCodec;
  private final Codec<R> replyCodec;
  private final int maxAttempts;
  private final int capacity;
  private final int maxBodyBytes;
  private final boolean keepResults;
  private final Duration pollInterval;
  private final LeaseManager leases;
  /** Null in the default mode (every acknowledgement durable on return). */
  private final DeferredAcknowledgements deferred;
  private final AtomicBoolean closed = new AtomicBoolean();

  private JdbcMailbox(Builder<T, R> b) {
    this.store = b.store;
    this.queue = b.queue;
    this.bodyCodec = b.bodyCodec;
    this.replyCodec = b.replyCodec;
    this.maxAttempts = b.maxAttempts;
    this.capacity = b.capacity;
    this.maxBodyBytes = b.maxBodyBytes;
    this.keepResults = b.keepResults;
    this.pollInterval = b.pollInterval != null ? b.pollInterval : store.defaultPollInterval();
    this.leases = new LeaseManager(store, b.holder,
        LeaseManagerConfig.defaults().withClock(b.clock));
    store.registerQueue(queue, maxAttempts, capacity);
    this.deferred = b.deferMaxBatch == 0 ? null
        : new DeferredAcknowledgements(queue, b.deferMaxBatch, b.deferMaxDelay, store.committer(),
            leases.clock());
  }

  /**
   * Returns a builder for a mailbox on {@code queue}.
   *
   * @param store the store
   * @param queue the queue name; see {@link QueueName} for the rule
   * @param bodyCodec the codec of message bodies
   * @param replyCodec the codec of reply bodies (and of results kept as outputs)
   * @param <T> the body type
   * @param <R> the reply type
   * @return the builder
   * @throws IllegalArgumentException if the queue name breaks the {@link QueueName} rule
   */
  public static <T, R> Builder<T, R> builder(
      TetherStore store, String queue, Codec<T> bodyCodec, Codec<R> replyCodec) {
    return new Builder<>(store, queue, bodyCodec, replyCodec);
  }

  /**
   * Returns a mailbox of UTF-8 text bodies and replies with the defaults.
   *
   * @param store the store
   * @param queue the queue
   * @return the mailbox
   */
  public static JdbcMailbox<String, String> ofStrings(TetherStore store, String queue) {
    return builder(store, queue, Codec.utf8(), Codec.utf8()).build();
  }

  @Override
  public String name() {
    return queue;
  }

  /**
   * Returns the budget given to messages sent through this mailbox (each item's {@code
   * max_attempts}).
   *
   * @return the budget
   */
  public int maxAttempts() {
    return maxAttempts;
  }

  /**
   * Returns the lease holder name this mailbox records for its deliveries.
   *
   * @return the holder
   */
  public String holder() {
    return leases.workerId();
  }

  @Override
  public String send(T body) {
    return send(body, null, null, Map.of());
  }

  /**
   * {@inheritDoc}
   *
   * <p>The headers are stored in the item's {@code headers} column: at most 32 entries and 8 KiB
   * encoded.
   */
  @Override
  public String send(T body, Map<String, String> headers) {
    Objects.requireNonNull(headers, "headers");
    return send(body, null, null, headers);
  }

  @Override
  public String send(T body, Mailbox<R, ?> replyTo) {
    Objects.requireNonNull(replyTo, "replyTo");
    if (!(replyTo instanceof JdbcMailbox) || ((JdbcMailbox<?, ?>) replyTo).store != store) {
      throw new InvalidParameterException(
          "replyTo mailbox '" + replyTo.name() + "' (" + replyTo.getClass().getName()
              + ") must be a JdbcMailbox on the same TetherStore as '" + queue
              + "', so that reply and acknowledge can be one transaction");
    }
    return send(body, replyTo.name(), null, Map.of());
  }

  /**
   * {@inheritDoc}
   *
   * <p>Replies between JDBC mailboxes are written by the requester's mailbox in the same
   * transaction as the acknowledgement; this method is for a requester of another kind.
   */
  @Override
  public String sendReply(T body, String inReplyTo) {
    return send(body, null, parseId(inReplyTo, "inReplyTo"), Map.of());
  }

  @Override
  public String sendErrorReply(ErrorReply error) {
    Objects.requireNonNull(error, "error");
    checkOpen("send");
    NewWorkItem item = NewWorkItem.builder(queue).input(Replies.encode(error))
        .replyOf(parseId(error.requestId(), "requestId")).errorReply().maxAttempts(maxAttempts).build();
    return Long.toString(call(() -> leases.enqueueWithin(item, 0), "send"));
  }

  private String send(T body, String replyTo, Long replyOf, Map<String, String> headers) {
    Objects.requireNonNull(body, "body");
    checkOpen("send");
    byte[] bytes = encode(bodyCodec, body, "message body");
    NewWorkItem.Builder b = NewWorkItem.builder(queue).input(bytes).maxAttempts(maxAttempts).replyTo(replyTo);
    if (!headers.isEmpty()) {
      try {
        b.headers(headers);
      } catch (IllegalArgumentException e) {
        throw new InvalidParameterException(e.getMessage() + "; nothing was sent to '" + queue + "'");
      }
    }
    if (replyOf != null) {
      b.replyOf(replyOf);
    }
    NewWorkItem item = b.build();
    return Long.toString(call(() -> leases.enqueueWithin(item, capacity), "send"));
  }

  /**
   * Sends a message on the caller's connection, inside the caller's transaction: it is visible
   * to receivers once that transaction commits, and never exists if it rolls back. Never commits,
   * rolls back or closes the connection; the capacity check, if any, holds the queue's lock
   * until the caller's transaction ends. Call {@link #wakeReceivers()} after the commit so that
   * this process's waiting receivers start it at once (other processes' are notified by the
   * commit on PostgreSQL, else they poll). See {@link LeaseManager#enqueue(Connection,
   * NewWorkItem)} for SQLite's locking.
   *
   * @param connection the caller's connection, on the store's database
   * @param body the body
   * @return the message id
   * @throws SerializationException if the body cannot be encoded or is too large (nothing written)
   * @throws MailboxFullException if the queue is at its capacity (nothing written)
   * @throws MailboxException on a database error (the caller's transaction is theirs to roll back)
   */
  public String send(Connection connection, T body) {
    return send(connection, body, Map.of());
  }

  /**
   * Sends a message with headers (a trace context, say) on the caller's connection, inside the
   * caller's transaction, as {@link #send(Connection, Object)} does; the headers are stored as
   * {@link #send(Object, Map)} stores them.
   *
   * @param connection the caller's connection, on the store's database
   * @param body the body
   * @param headers the headers (may be empty)
   * @return the message id
   * @throws SerializationException if the body cannot be encoded or is too large (nothing written)
   * @throws InvalidParameterException if the headers exceed their limits (nothing written)
   * @throws MailboxFullException if the queue is at its capacity (nothing written)
   * @throws MailboxException on a database error (the caller's transaction is theirs to roll back)
   */
  public String send(Connection connection, T body, Map<String, String> headers) {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(body, "body");
    Objects.requireNonNull(headers, "headers");
    checkOpen("send");
    byte[] bytes = encode(bodyCodec, body, "message body");
    NewWorkItem.Builder b = NewWorkItem.builder(queue).input(bytes).maxAttempts(maxAttempts);
    if (!headers.isEmpty()) {
      try {
        b.headers(headers);
      } catch (IllegalArgumentException e) {
        throw new InvalidParameterException(e.getMessage() + "; nothing was sent");
      }
    }
    NewWorkItem item = b.build();
    return Long.toString(call(() -> leases.enqueueOn(connection, item, capacity), "send"));
  }

  /**
   * Wakes this process's receivers waiting on the store: after a transaction that sent with
   * {@link #send(Connection, Object)} committed. Never blocks.
   */
  public void wakeReceivers() {
    leases.wakeReceivers();
  }

  private long parseId(String id, String what) {
    try {
      return Long.parseLong(Objects.requireNonNull(id, what));
    } catch (NumberFormatException e) {
      throw new InvalidParameterException(what + " '" + id + "' is not a message id of a JDBC mailbox");
    }
  }

  private <X> byte[] encode(Codec<X> codec, X body, String what) {
    byte[] bytes;
    try {
      bytes = codec.encode(body);
    } catch (RuntimeException e) {
      throw new SerializationException("cannot encode the " + what + " for mailbox '" + queue
          + "' with " + codec + ": " + e.getMessage() + "; nothing was written", e);
    }
    if (bytes == null) {
      throw new SerializationException(codec + " encoded a " + what + " for mailbox '" + queue
          + "' as null; nothing was written");
    }
    if (bytes.length > maxBodyBytes) {
      throw new SerializationException("the " + what + " for mailbox '" + queue + "' is "
          + bytes.length + " bytes encoded, over the limit of " + maxBodyBytes
          + " bytes; nothing was written: send a reference to the data instead, or raise maxBodyBytes");
    }
    return bytes;
  }

  /** The pause between database polls of a waiting receive (the builder's, or the store's). */
  Duration pollInterval() {
    return pollInterval;
  }

  @Override
  public List<Message<T, R>> receive(int maxMessages, Duration visibilityTimeout, Duration waitTime) {
    if (maxMessages < 1 || maxMessages > MAX_MESSAGES_PER_RECEIVE) {
      throw new InvalidParameterException("maxMessages must be in 1.." + MAX_MESSAGES_PER_RECEIVE
          + ", was " + maxMessages);
    }
    checkTimeout("visibilityTimeout", visibilityTimeout, MAX_VISIBILITY_TIMEOUT);
    checkTimeout("waitTime", waitTime, MAX_WAIT_TIME);
    if (deferred != null
        && visibilityTimeout.compareTo(deferred.maxDelay().multipliedBy(MIN_LEASE_PER_DELAY)) < 0) {
      throw new InvalidParameterException("visibilityTimeout must be at least " + MIN_LEASE_PER_DELAY
          + " x the deferred acknowledgements' maxDelay of mailbox '" + queue + "' ("
          + deferred.maxDelay().multipliedBy(MIN_LEASE_PER_DELAY) + "), was " + visibilityTimeout
          + ": a queued acknowledgement must commit well before its lease expires");
    }
    AcquireRequest request = new AcquireRequest(queue, visibilityTimeout, maxMessages, null, null);
    long[] requestedAt = new long[1]; // the start of the attempt that took the leases
    List<Lease> got = call(() -> AcquireWait.acquire(store, request, () -> {
      requestedAt[0] = System.nanoTime();
      return leases.acquire(request);
    }, leases.prober(queue), leases.onRealClock(), waitTime, pollInterval, closed::get), "receive");
    return got.isEmpty() ? List.of() : toMessages(got, requestedAt[0]);
  }

  private List<Message<T, R>> toMessages(List<Lease> got, long requestedAt) {
    List<Lease> sorted = new ArrayList<>(got);
    sorted.sort(Comparator.comparingLong(Lease::itemId));
    List<Message<T, R>> out = new ArrayList<>(sorted.size());
    for (Lease l : sorted) {
      if (l.errorReply()) {
        out.add(new JdbcMessage(l, null, requestedAt));
        continue;
      }
      T body;
      try {
        body = bodyCodec.decode(l.input() == null ? new byte[0] : l.input());
      } catch (RuntimeException e) {
        // Bytes that cannot be decoded now never will be: dead-lettered at once, never retried,
        // and never handed to a handler (the loop goes on with the next message).
        SerializationException bad = new SerializationException("cannot decode the body of message "
            + l.itemId() + " of mailbox '" + queue + "' with " + bodyCodec + ": " + e, e);
        String reason = bad.getMessage();
        LOG.warn("Dead-lettering message {} of mailbox '{}' at once", l.itemId(), queue, bad);
        try {
          leases.deadLetter(l.itemId(), l.token(), reason);
        } catch (RuntimeException again) {
          LOG.warn("Could not dead-letter undecodable message {}; it will be redelivered", l.itemId(), again);
        }
        continue;
      }
      out.add(new JdbcMessage(l, body, requestedAt));
    }
    return out;
  }

  /**
   * Acknowledges several messages received from this mailbox in one transaction (one commit for
   * all, rather than one each): each acknowledgement is a token-checked completion applied or
   * refused on its own, exactly as {@link Message#acknowledge()} would; every applied one is
   * durable when this returns. Blocks for one database round trip or so.
   *
   * @param messages messages received from this mailbox (not yet finalized through this call)
   * @return the messages not acknowledged, by id, with why: {@link ReceiptHandleExpiredException}
   *     for a stale handle, {@link MessageFinalizedException} for a message already finalized,
   *     {@link MailboxConnectionException} or {@link MailboxException} when the transaction
   *     holding it failed (it may be retried); empty when all were acknowledged
   * @throws InvalidParameterException if a message was not received from this mailbox (then
   *     nothing was acknowledged)
   */
  public Map<String, MailboxException> acknowledgeAll(List<? extends Message<T, R>> messages) {
    Objects.requireNonNull(messages, "messages");
    List<LeaseKey> handles = new ArrayList<>(messages.size());
    for (Message<T, R> m : messages) {
      if (!(m instanceof JdbcMailbox.JdbcMessage) || ((JdbcMessage) m).owner() != this) {
        throw new InvalidParameterException("message " + m + " was not received from mailbox '"
            + queue + "' (" + this + "); nothing was acknowledged");
      }
      JdbcMessage jm = (JdbcMessage) m;
      handles.add(new LeaseKey(jm.id, jm.token));
    }
    if (handles.isEmpty()) {
      return Map.of();
    }
    List<RuntimeException> outcomes = call(() -> leases.completeAll(handles), "acknowledgeAll");
    Map<String, MailboxException> refused = new LinkedHashMap<>();
    for (int i = 0; i < outcomes.size(); i++) {
      RuntimeException cause = outcomes.get(i);
      if (cause != null) {
        refused.put(messages.get(i).id(), translate(cause, "acknowledge"));
      }
    }
    return refused;
  }

  /**
   * Cancels a message: it ends {@code cancelled} whether it is waiting or being worked on (its
   * holder's next extension, checkpoint or acknowledgement is refused with {@link
   * MessageCancelledException}), and its requester, if any, gets an error reply.
   *
   * @param messageId the message's id
   * @param reason why, for operators and the requester
   * @return true if it was cancelled; false if unknown or already finished
   * @throws InvalidParameterException if the id is not a message id of this kind of mailbox
   * @throws MailboxConnectionException if the store cannot be reached
   */
  public boolean cancel(String messageId, String reason) {
    long id = parseId(messageId, "messageId");
    return call(() -> new QueueAdmin(store).cancel(id, reason), "cancel");
  }

  @Override
  public long approximateCount() {
    return call(() -> store.read("counting mailbox '" + queue + "'",
        c -> store.sql().inserts().countUnfinished(c, queue)), "approximateCount");
  }

  @Override
  public long purge() {
    return call(() -> store.write("purging mailbox '" + queue + "'",
        c -> store.sql().purges().purgeUnfinished(c, queue)), "purge");
  }

  /**
   * Returns the ids of this mailbox's dead letters ({@code failed} items), oldest first.
   *
   * @return the ids
   */
  public List<String> deadLetteredIds() {
    return call(() -> store.read("listing dead letters of '" + queue + "'", c -> {
      List<String> ids = new ArrayList<>();
      for (long id : store.sql().reads().failedIds(c, queue)) {
        ids.add(Long.toString(id));
      }
      return ids;
    }), "deadLetteredIds");
  }

  /**
   * Returns whether the mailbox's store looks usable: {@link TetherStore#isAvailable()} (false
   * from a store fault of any call on the store, including a lost notification listener, until a
   * later call works).
   *
   * @return false while the store is known to be failing
   */
  @Override
  public boolean isAvailable() {
    return store.isAvailable();
  }

  /**
   * Closes the mailbox: wakes waiting receivers at once and, with {@link
   * Builder#deferredAcknowledgements deferred acknowledgements}, commits every queued
   * acknowledgement and waits for it before it stops the flusher thread (acknowledgements after
   * this are durable on return, as in the default mode). Does not close the store.
   */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      store.wakeAllReceivers();
      if (deferred != null) {
        deferred.close();
      }
    }
  }

  /**
   * With {@link Builder#deferredAcknowledgements deferred acknowledgements}: commits every
   * acknowledgement queued so far and returns once each was applied or refused (refusals are
   * logged and counted in {@link #deferredAcknowledgementsRefused()}). In the default mode there
   * is nothing to flush: returns at once. A {@link dev.tether.loop.MainLoop} calls this when it
   * stops. A queued acknowledgement whose commit failed (the database unreachable) is not thrown
   * here: it is logged and counted in {@link #deferredAcknowledgementsFailed()}, and its message
   * is redelivered when its lease expires.
   */
  @Override
  public void flushAcknowledgements() {
    if (deferred != null) {
      deferred.flush();
    }
  }

  /**
   * Whether this mailbox defers acknowledgements ({@link Builder#deferredAcknowledgements}).
   *
   * @return false in the default mode
   */
  public boolean defersAcknowledgements() {
    return deferred != null;
  }

  /**
   * Deferred acknowledgements queued and not yet committed (0 in the default mode).
   *
   * @return the count
   */
  public int pendingAcknowledgements() {
    return deferred == null ? 0 : deferred.unflushed();
  }

  /**
   * Deferred acknowledgements refused when they were committed, not applied: the lease token was
   * stale (the lease expired and the message was redelivered, or it was cancelled or finalized).
   * Each is also logged at WARN with the message's id. Always 0 in the default mode, where the
   * refusal is thrown to the caller.
   *
   * @return the count since the mailbox was built
   */
  public long deferredAcknowledgementsRefused() {
    return deferred == null ? 0 : deferred.refused();
  }

  /**
   * Deferred acknowledgements whose commit failed (the database could not be reached), not
   * applied: their messages are redelivered when their leases expire. Each is also logged at
   * WARN. Always 0 in the default mode, where the failure is thrown to the caller.
   *
   * @return the count since the mailbox was built
   */
  public long deferredAcknowledgementsFailed() {
    return deferred == null ? 0 : deferred.failed();
  }

  /**
   * Deferred acknowledgements committed and applied. Always 0 in the default mode.
   *
   * @return the count since the mailbox was built
   */
  public long deferredAcknowledgementsCommitted() {
    return deferred == null ? 0 : deferred.committed();
  }

  @Override
  public String toString() {
    return "JdbcMailbox[" + queue + " on " + store + "]";
  }

  private void checkOpen(String op) {
    if (closed.get()) {
      throw new IllegalStateException("mailbox '" + queue + "' is closed; cannot " + op);
    }
  }

  private static void checkTimeout(String name, Duration d, Duration max) {
    Objects.requireNonNull(d, name);
    if (d.isNegative() || d.compareTo(max) > 0) {
      throw new InvalidParameterException(name + " must be in 0.." + max + ", was " + d);
    }
  }

  private static <X> X call(Supplier<X> action, String op) {
    try {
      return action.get();
    } catch (MailboxException e) {
      throw e;
    } catch (TetherStoreException e) {
      throw translate(e, op);
    }
  }

  /** The one mapping of the store's exceptions to the mailbox's. */
  static MailboxException translate(RuntimeException e, String op) {
    if (e instanceof MailboxException) {
      return (MailboxException) e;
    }
    if (e instanceof ItemCancelledException) {
      return new MessageCancelledException(e.getMessage(), e);
    }
    if (e instanceof ItemFinalizedException) {
      return new MessageFinalizedException(e.getMessage(), e);
    }
    if (e instanceof LeaseLostException) {
      return new ReceiptHandleExpiredException(e.getMessage(), e);
    }
    if (e instanceof StoreUnavailableException) {
      return new MailboxConnectionException(op + " failed: " + e.getMessage(), e);
    }
    return new MailboxException(op + " failed: " + e.getMessage(), e);
  }

  /** One delivery. */
  private final class JdbcMessage implements Message<T, R> {
    // Only what the message needs, never the Lease itself: a held message must not keep the
    // stored input (already decoded into body) or the lease's other fields alive.
    private final long id;
    private final long token;
    private final T body;
    private final int deliveryCount;
    private final int attempt;
    private final int maxAttempts;
    private final Instant enqueuedAt;
    private final String replyTo;
    private final Long replyOf;
    private final ErrorReply errorReply;
    private final String workType;
    private final Map<String, String> headers;
    private final long requestedAt;
    private volatile byte[] progress;
    private volatile Supplier<OutputTail> outputSource;
    private volatile long outputBytesSent = -1;
    /**
     * Flushes of the output begun so far: an extension whose renewal was in flight while one began
     * may have written its older snapshot after the flush's newer one, and writes the output again.
     */
    private final AtomicLong flushesBegun = new AtomicLong();
    /** Its completion is queued (deferred mode): no further operation may go to the store. */
    private volatile boolean acknowledgedDeferred;

    JdbcMessage(Lease lease, T body, long requestedAt) {
      this.id = lease.itemId();
      this.token = lease.token();
      this.body = body;
      this.deliveryCount = lease.deliveryCount();
      this.attempt = lease.attempt();
      this.maxAttempts = lease.maxAttempts();
      this.enqueuedAt = lease.createdAt();
      this.replyTo = lease.replyTo();
      this.replyOf = lease.replyOf();
      this.errorReply = lease.errorReply() && lease.replyOf() != null
          ? Replies.decode(lease.replyOf(), lease.input())
          : null;
      this.progress = lease.progress();
      this.workType = lease.workType();
      this.requestedAt = requestedAt;
      this.headers = lease.headerMap();
    }

    JdbcMailbox<T, R> owner() {
      return JdbcMailbox.this;
    }

    @Override
    public String id() {
      return Long.toString(id);
    }

    @Override
    public T body() {
      if (errorReply != null) {
        throw new RequestFailedException(errorReply);
      }
      return body;
    }

    @Override
    public String receiptHandle() {
      return id + ":" + Long.toHexString(token);
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
      return maxAttempts;
    }

    @Override
    public Instant enqueuedAt() {
      return enqueuedAt;
    }

    @Override
    public boolean hasReplyTo() {
      return replyTo != null;
    }

    @Override
    public Optional<String> inReplyTo() {
      return Optional.ofNullable(replyOf).map(String::valueOf);
    }

    @Override
    public Optional<String> workType() {
      return Optional.ofNullable(workType);
    }

    @Override
    public Map<String, String> headers() {
      return headers;
    }

    @Override
    public java.util.OptionalLong leaseRequestedAtNanos() {
      return java.util.OptionalLong.of(requestedAt);
    }

    @Override
    public Optional<ErrorReply> errorReply() {
      return Optional.ofNullable(errorReply);
    }

    @Override
    public Optional<byte[]> lastCheckpoint() {
      byte[] p = progress;
      return p == null ? Optional.empty() : Optional.of(p.clone());
    }

    @Override
    public void checkpoint(byte[] data) {
      Objects.requireNonNull(data, "data");
      if (data.length > MAX_CHECKPOINT_BYTES) {
        throw new InvalidParameterException("checkpoint of message " + id + " in mailbox '" + queue
            + "' is " + data.length + " bytes, over the limit of " + MAX_CHECKPOINT_BYTES
            + "; nothing was written: keep large state elsewhere and checkpoint a reference");
      }
      notDeferred("checkpoint");
      byte[] copy = data.clone();
      call(() -> {
        leases.checkpoint(id, token, copy);
        return null;
      }, "checkpoint");
      progress = copy;
    }

    @Override
    public void reportOutput(Supplier<OutputTail> source) {
      this.outputSource = Objects.requireNonNull(source, "source");
    }

    @Override
    public void flushOutput() {
      notDeferred("flushOutput");
      flushesBegun.incrementAndGet();
      OutputTail out = output(true);
      if (out == null) {
        return;
      }
      if (call(() -> leases.recordOutput(id, token, out), "flushOutput")) {
        outputBytesSent = out.bytes();
      }
    }

    /** The current output, or null when none is reported, it did not change, or it failed. */
    private OutputTail output(boolean onlyIfChanged) {
      Supplier<OutputTail> source = outputSource;
      if (source == null) {
        return null;
      }
      OutputTail out;
      try {
        out = source.get();
      } catch (RuntimeException e) {
        LOG.warn("The output source of message {} in mailbox '{}' failed; its output is not written",
            id, queue, e);
        return null;
      }
      if (out == null || (onlyIfChanged && out.bytes() == outputBytesSent)) {
        return null;
      }
      return out;
    }

    /**
     * {@inheritDoc}
     *
     * <p>With {@link Builder#deferredAcknowledgements deferred acknowledgements}, returns once the
     * completion is queued (see there); a second acknowledgement or any later operation on the
     * message then throws {@link MessageFinalizedException} without going to the store.
     */
    @Override
    public void acknowledge() {
      if (deferred != null) {
        deferAcknowledge(null, "acknowledge");
        return;
      }
      call(() -> {
        leases.complete(id, token, null);
        return null;
      }, "acknowledge");
    }

    private void deferAcknowledge(byte[] output, String op) {
      notDeferred(op);
      call(() -> {
        deferred.add(leases, id, token, output);
        return null;
      }, op);
      acknowledgedDeferred = true;
    }

    /** Refuses an operation on a message whose completion is queued, as the store would. */
    private void notDeferred(String op) {
      if (acknowledgedDeferred) {
        throw new MessageFinalizedException("message " + id + " of mailbox '" + queue
            + "' was already acknowledged (its deferred acknowledgement is queued or committed);"
            + " cannot " + op);
      }
    }

    @Override
    public void handBack() {
      notDeferred("handBack");
      call(() -> {
        leases.handBack(id, token, Duration.ZERO, output(false));
        return null;
      }, "handBack");
    }

    @Override
    public NackOutcome nack(Duration visibilityTimeout, String reason) {
      checkTimeout("visibilityTimeout", visibilityTimeout, MAX_VISIBILITY_TIMEOUT);
      notDeferred("nack");
      OutputTail out = output(false);
      ReleaseOutcome outcome = call(() -> leases.nack(id, token, visibilityTimeout, reason, out), "nack");
      return outcome == ReleaseOutcome.FAILED ? NackOutcome.DEAD_LETTERED : NackOutcome.RETRY_SCHEDULED;
    }

    @Override
    public void extendVisibility(Duration timeout) {
      checkTimeout("timeout", timeout, MAX_VISIBILITY_TIMEOUT);
      notDeferred("extendVisibility");
      long flushes = flushesBegun.get();
      OutputTail out = output(true);
      call(() -> leases.renew(id, token, timeout, out), "extendVisibility");
      if (out != null) {
        outputBytesSent = out.bytes();
        if (flushesBegun.get() != flushes) {
          // a flush of newer output began while this renewal carried an older snapshot, which may
          // have landed after it (a renewal waits for its batch): write the current output again
          outputBytesSent = -1;
          try {
            flushOutput();
          } catch (RuntimeException e) {
            LOG.debug("Writing the output of message {} in mailbox '{}' again failed; the next"
                + " extension or flush carries it: {}", id, queue, e.toString());
          }
        }
      }
    }

    @Override
    public LeaseStatus checkLease() {
      return call(() -> leases.checkLease(id, token), "checkLease");
    }

    /**
     * Watches through the store's {@link CancelWatch}: on PostgreSQL with notifications the
     * cancelling transaction's notification, else a check of this process's held items every
     * half second.
     */
    @Override
    public Subscription watchCancellation(Runnable onCancelled) {
      java.util.Objects.requireNonNull(onCancelled, "onCancelled");
      return store.cancelWatch().watch(id, onCancelled);
    }

    @Override
    public void reply(R replyBody) {
      if (replyTo == null) {
        throw new ReplyNotAvailableException("message " + id + " of mailbox '" + queue
            + "' was sent without a reply-to mailbox; nothing was sent");
      }
      Objects.requireNonNull(replyBody, "body");
      notDeferred("reply");
      NewWorkItem reply = replyItem(encode(replyCodec, replyBody, "reply"));
      call(() -> {
        leases.reply(id, token, reply, replyCapacity());
        return null;
      }, "reply");
    }

    /**
     * {@inheritDoc}
     *
     * <p>With {@link Builder#deferredAcknowledgements deferred acknowledgements}, a message
     * without a reply-to is acknowledged as {@link #acknowledge()} is (deferred, with the result
     * as output when results are kept); one with a reply-to is replied to and acknowledged in one
     * transaction before this returns, as in the default mode (the reply must not wait).
     */
    @Override
    public void replyAndAcknowledge(R replyBody) {
      byte[] bytes = replyTo != null || (keepResults && replyBody != null)
          ? encode(replyCodec, Objects.requireNonNull(replyBody, "body"), "reply")
          : null;
      byte[] output = keepResults ? bytes : null;
      if (replyTo == null && deferred != null) {
        deferAcknowledge(output, "replyAndAcknowledge");
        return;
      }
      notDeferred("replyAndAcknowledge");
      if (replyTo == null) {
        call(() -> {
          leases.complete(id, token, output);
          return null;
        }, "replyAndAcknowledge");
        return;
      }
      NewWorkItem reply = replyItem(bytes);
      call(() -> {
        leases.completeWithReply(id, token, output, reply, replyCapacity());
        return null;
      }, "replyAndAcknowledge");
    }

    private NewWorkItem replyItem(byte[] bytes) {
      TetherStore.QueueSettings settings = store.queueSettings(replyTo)
          .orElse(new TetherStore.QueueSettings(maxAttempts, 0));
      return NewWorkItem.builder(replyTo).input(bytes).maxAttempts(settings.maxAttempts())
          .replyOf(id).build();
    }

    private int replyCapacity() {
      return store.queueSettings(replyTo).map(TetherStore.QueueSettings::capacity).orElse(0);
    }

    @Override
    public void deadLetter(String reason) {
      notDeferred("deadLetter");
      OutputTail out = output(false);
      call(() -> {
        leases.deadLetter(id, token, reason, out);
        return null;
      }, "deadLetter");
    }

    @Override
    public String toString() {
      return "JdbcMessage[id=" + id + ", queue=" + queue + ", delivery=" + deliveryCount
          + ", attempt=" + attempt + "/" + maxAttempts + ", handle=" + receiptHandle() + "]";
    }
  }

  /** Builds a {@link JdbcMailbox}; every setter validates its value at once. Not thread-safe. */
  public static final class Builder<T, R> {
    private final TetherStore store;
    private final String queue;
    private final Codec<T> bodyCodec;
    private final Codec<R> replyCodec;
    private int maxAttempts = NewWorkItem.DEFAULT_MAX_ATTEMPTS;
    private int capacity;
    private int maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
    private boolean keepResults;
    private Clock clock;
    private Duration pollInterval;
    private String holder = "mailbox-" + UUID.randomUUID();
    private int deferMaxBatch;
    private Duration deferMaxDelay;

    private Builder(TetherStore store, String queue, Codec<T> bodyCodec, Codec<R> replyCodec) {
      this.store = Objects.requireNonNull(store, "store");
      this.queue = QueueName.requireValid(queue, "queue");
      this.bodyCodec = Objects.requireNonNull(bodyCodec, "bodyCodec");
      this.replyCodec = Objects.requireNonNull(replyCodec, "replyCodec");
    }

    /**
     * Sets the budget of messages sent through this mailbox: the charged attempts after which a
     * message that keeps failing or expiring is dead-lettered (a hand-back is not charged).
     * Default {@link NewWorkItem#DEFAULT_MAX_ATTEMPTS}.
     *
     * @param maxAttempts at least 1
     * @return this builder
     * @throws IllegalArgumentException if less than 1
     */
    public Builder<T, R> maxAttempts(int maxAttempts) {
      if (maxAttempts < 1) {
        throw new IllegalArgumentException("maxAttempts must be >= 1, was " + maxAttempts);
      }
      this.maxAttempts = maxAttempts;
      return this;
    }

    /**
     * Bounds the number of unfinished messages; sends beyond it throw {@link MailboxFullException}.
     *
     * @param capacity 0 for unbounded, else positive
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder<T, R> capacity(int capacity) {
      if (capacity < 0) {
        throw new IllegalArgumentException("capacity must be >= 0 (0 = unbounded), was " + capacity);
      }
      this.capacity = capacity;
      return this;
    }

    /**
     * Sets the largest encoded body or reply accepted.
     *
     * @param bytes 1 to 64 MiB
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder<T, R> maxBodyBytes(int bytes) {
      if (bytes < 1 || bytes > 64 * 1024 * 1024) {
        throw new IllegalArgumentException("maxBodyBytes must be in 1..67108864, was " + bytes);
      }
      this.maxBodyBytes = bytes;
      return this;
    }

    /**
     * Keeps each message's result: {@link Message#replyAndAcknowledge} stores the result, encoded
     * by the reply codec, as the item's output (for operators and {@link LeaseManager#find}),
     * whether or not the message has a reply-to. Default off: an acknowledgement writes no output
     * (on PostgreSQL, completions without output share one statement with concurrent
     * acquisitions).
     *
     * @param keep whether to keep results
     * @return this builder
     */
    public Builder<T, R> keepResults(boolean keep) {
      this.keepResults = keep;
      return this;
    }

    /**
     * Sets the clock deciding instants and expiry (tests); default: the store's.
     *
     * @param clock the clock
     * @return this builder
     */
    public Builder<T, R> clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /**
     * Sets the pause between database polls of a waiting receive (one poll per queue and
     * process, however many receivers wait). Sends in this process wake receivers at once, and
     * so do other processes' sends on PostgreSQL with notifications on; the poll finds the rest
     * (on PostgreSQL leases other processes took that expire, and sooner where a look learnt that
     * a delayed message or lease comes due; on SQLite delayed messages, expired leases and other
     * processes' sends). Default: {@link TetherStore#defaultPollInterval()}.
     *
     * @param interval 1 ms to 5 s
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder<T, R> pollInterval(Duration interval) {
      Objects.requireNonNull(interval, "interval");
      if (interval.toMillis() < 1 || interval.compareTo(Duration.ofSeconds(5)) > 0) {
        throw new IllegalArgumentException("pollInterval must be in 1ms..5s, was " + interval);
      }
      this.pollInterval = interval;
      return this;
    }

    /**
     * Sets the lease holder name recorded for deliveries (for operators).
     *
     * @param holder not blank
     * @return this builder
     * @throws IllegalArgumentException if blank
     */
    public Builder<T, R> holder(String holder) {
      Objects.requireNonNull(holder, "holder");
      if (holder.isBlank()) {
        throw new IllegalArgumentException("holder must not be blank");
      }
      this.holder = holder;
      return this;
    }

    /**
     * Turns on <i>deferred acknowledgements</i>, for queues of short items: {@link
     * Message#acknowledge()} and {@link Message#replyAndAcknowledge} (for a message without a
     * reply-to) return once the completion is queued, without waiting for it to be durable. Off by
     * default: every acknowledgement is durable on return.
     *
     * <p>How queued completions commit: in the store's group commit, each a conditional update on
     * (id, lease token, status), so fencing is unchanged; usually with the next receive of any
     * mailbox of the store (its acquisition shares the statement), else when {@code maxBatch} of
     * this mailbox's are queued (the acknowledgement that reaches the bound commits them all
     * before it returns), else when the oldest has waited {@code maxDelay} (a daemon thread of
     * this mailbox, {@code tether-ack-flusher-<queue>-<n>}, started by {@link #build()} and
     * stopped by {@link JdbcMailbox#close()}). {@link JdbcMailbox#close()} and {@link
     * JdbcMailbox#flushAcknowledgements()} commit all queued and wait for them.
     *
     * <p>The price: a crash loses what is queued, at most {@code maxBatch} acknowledgements (plus
     * one for each other thread acknowledging at that instant), and those already-finished
     * messages are delivered again when their leases expire: at-least-once, as before, but
     * finished work may run twice. An acknowledgement refused at commit (its lease was lost: the
     * message belongs to a newer delivery) is not applied and cannot be thrown to the handler any
     * more: it is logged at WARN with the message id and counted in {@link
     * JdbcMailbox#deferredAcknowledgementsRefused()} (a {@link dev.tether.loop.MainLoop}'s listener
     * has already heard {@code completed} for it, when it was queued). Leases: {@code maxDelay} is at most {@link
     * JdbcMailbox#MAX_DEFERRED_DELAY}, and receives must ask for a visibility timeout of at least {@link
     * JdbcMailbox#MIN_LEASE_PER_DELAY} x {@code maxDelay}, so a queued completion commits long before its
     * lease could expire; a message whose acknowledgement is queued refuses every later
     * operation (extension, checkpoint, nack, ...) with {@link MessageFinalizedException}, so it
     * is never renewed after it was acknowledged. Replies are never deferred: a message with a
     * reply-to is replied to and acknowledged in one transaction, durable on return.
     *
     * <p>Works on SQLite and PostgreSQL; on PostgreSQL completions without output commit in the
     * same statement as the receives they ride with.
     *
     * @param maxBatch the most acknowledgements queued before the acknowledging thread commits
     *     them: 1 to {@value JdbcMailbox#MAX_DEFERRED_BATCH}
     * @param maxDelay the longest an acknowledgement stays queued when nothing else commits it:
     *     1 ms to {@link JdbcMailbox#MAX_DEFERRED_DELAY}
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder<T, R> deferredAcknowledgements(int maxBatch, Duration maxDelay) {
      Objects.requireNonNull(maxDelay, "maxDelay");
      if (maxBatch < 1 || maxBatch > MAX_DEFERRED_BATCH) {
        throw new IllegalArgumentException("deferredAcknowledgements: maxBatch must be in 1.."
            + MAX_DEFERRED_BATCH + ", was " + maxBatch);
      }
      if (maxDelay.compareTo(Duration.ofMillis(1)) < 0 || maxDelay.compareTo(MAX_DEFERRED_DELAY) > 0) {
        throw new IllegalArgumentException("deferredAcknowledgements: maxDelay must be in 1ms.."
            + MAX_DEFERRED_DELAY + ", was " + maxDelay);
      }
      this.deferMaxBatch = maxBatch;
      this.deferMaxDelay = maxDelay;
      return this;
    }

    /**
     * Builds the mailbox.
     *
     * @return the mailbox
     */
    public JdbcMailbox<T, R> build() {
      return new JdbcMailbox<>(this);
    }
  }
}
