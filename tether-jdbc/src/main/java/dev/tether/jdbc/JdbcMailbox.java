package dev.tether.jdbc;

import dev.tether.QueueName;
import dev.tether.mailbox.InvalidParameterException;
import dev.tether.mailbox.Mailbox;
import dev.tether.mailbox.MailboxConnectionException;
import dev.tether.mailbox.MailboxException;
import dev.tether.mailbox.MailboxFullException;
import dev.tether.mailbox.Message;
import dev.tether.mailbox.MessageFinalizedException;
import dev.tether.mailbox.ReceiptHandleExpiredException;
import dev.tether.mailbox.ReplyNotAvailableException;
import dev.tether.mailbox.SerializationException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A durable {@link Mailbox} over the {@code work_items} table of a {@link TetherStore}: one queue
 * per mailbox. A receive is a lease acquisition (visibility timeout = lease duration, expired
 * leases are redelivered or dead-lettered at once), the receipt handle names the item and its
 * lease token, and every operation through a message is a token-checked conditional update:
 * {@code extendVisibility} renews (never shortens), {@code acknowledge} completes, {@code nack}
 * hands back with {@code available_at = now + timeout}, {@code deadLetter} fails the item with the
 * reason, and {@code replyAndAcknowledge} inserts the reply into the reply-to queue and completes
 * the item in one transaction.
 *
 * <p>Dead letters stay in the table as {@code failed} items (see {@link #deadLetteredIds()},
 * {@link QueueMonitor}, {@link LeaseManager#redrive}). The mailbox's maximum deliveries is stored
 * as each item's {@code max_attempts}.
 *
 * <p>Errors: a stale handle throws {@link ReceiptHandleExpiredException}, a second finalization
 * {@link MessageFinalizedException}, an unreachable database {@link MailboxConnectionException},
 * an unencodable or oversized body {@link SerializationException} (nothing written).
 *
 * <p>Thread-safe. {@link #receive} long-polls the database, woken at once by sends in this
 * process and, on PostgreSQL with notifications on, by other processes' sends (see {@link
 * Builder#pollInterval}); {@link #close()} wakes waiting receivers. Closing the mailbox does not close the
 * store.
 *
 * @param <T> the body type
 * @param <R> the reply body type
 */
public final class JdbcMailbox<T, R> implements Mailbox<T, R> {
  private static final Logger LOG = LoggerFactory.getLogger(JdbcMailbox.class);

  /** Default largest encoded body: 256 KiB, as in SQS. */
  public static final int DEFAULT_MAX_BODY_BYTES = 256 * 1024;

  /**
   * Default pause between database polls of a waiting receive on a store that hears no other
   * process's sends: SQLite, or PostgreSQL with notifications off.
   */
  public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofMillis(100);

  /**
   * Default pause between database polls of a waiting receive on PostgreSQL with notifications
   * on (the default): sends of every process wake receivers through {@code LISTEN/NOTIFY}, so the
   * poll only finds delayed messages coming due, expired leases and messages handed back by other
   * processes.
   */
  public static final Duration DEFAULT_NOTIFIED_POLL_INTERVAL = Duration.ofSeconds(1);

  private final TetherStore store;
  private final String queue;
  private final BodyCodec<T> bodyCodec;
  private final BodyCodec<R> replyCodec;
  private final int maxDeliveries;
  private final int capacity;
  private final int maxBodyBytes;
  private final Clock clock;
  private final Duration pollInterval;
  private final String holder;
  private final StoreSql sql;
  private final AtomicBoolean closed = new AtomicBoolean();

  private JdbcMailbox(Builder<T, R> b) {
    this.store = b.store;
    this.queue = b.queue;
    this.bodyCodec = b.bodyCodec;
    this.replyCodec = b.replyCodec;
    this.maxDeliveries = b.maxDeliveries;
    this.capacity = b.capacity;
    this.maxBodyBytes = b.maxBodyBytes;
    this.clock = store.effectiveClock(b.clock);
    this.pollInterval = b.pollInterval != null
        ? b.pollInterval
        : store.usesNotifications() ? DEFAULT_NOTIFIED_POLL_INTERVAL : DEFAULT_POLL_INTERVAL;
    this.holder = b.holder;
    this.sql = store.sql();
    store.registerQueue(queue, maxDeliveries, capacity);
  }

  /**
   * Returns a builder for a mailbox on {@code queue}.
   *
   * @param store the store
   * @param queue the queue name; see {@link QueueName} for the rule
   * @param bodyCodec the codec of message bodies
   * @param replyCodec the codec of reply bodies
   * @param <T> the body type
   * @param <R> the reply type
   * @return the builder
   * @throws IllegalArgumentException if the queue name breaks the {@link QueueName} rule
   */
  public static <T, R> Builder<T, R> builder(
      TetherStore store, String queue, BodyCodec<T> bodyCodec, BodyCodec<R> replyCodec) {
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
    return builder(store, queue, BodyCodec.utf8(), BodyCodec.utf8()).build();
  }

  @Override
  public String name() {
    return queue;
  }

  /**
   * Returns the mailbox's maximum deliveries (each item's {@code max_attempts}).
   *
   * @return the budget
   */
  public int maxDeliveries() {
    return maxDeliveries;
  }

  @Override
  public String send(T body) {
    return doSend(body, null);
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
    return doSend(body, replyTo.name());
  }

  private String doSend(T body, String replyTo) {
    Objects.requireNonNull(body, "body");
    checkOpen("send");
    byte[] bytes = encode(bodyCodec, body, "message body");
    NewWorkItem item = NewWorkItem.builder(queue).input(bytes).maxAttempts(maxDeliveries)
        .replyTo(replyTo).build();
    String what = "sending to mailbox '" + queue + "'";
    long id;
    if (capacity == 0) {
      // Unbounded: as the engine enqueues best (on PostgreSQL one auto-committed statement).
      id = call(() -> store.enqueue(what, item, clock), "send");
    } else {
      id = call(() -> store.write(what, c -> {
        Instant now = store.now(c, clock);
        checkCapacity(c, queue, capacity, "mailbox");
        long inserted = sql.inserts().insert(c, item, now);
        store.notifyItems(c);
        return inserted;
      }), "send");
    }
    store.signalItems();
    return Long.toString(id);
  }

  private void checkCapacity(Connection c, String q, int cap, String what) throws SQLException {
    store.storeEngine().lockQueue(c, q);
    long count = sql.inserts().countUnfinished(c, q);
    if (count >= cap) {
      throw new MailboxFullException(what + " '" + q + "' holds " + count
          + " unfinished messages, its capacity is " + cap
          + "; nothing was sent: retry after messages are acknowledged, or raise the capacity");
    }
  }

  private <X> byte[] encode(BodyCodec<X> codec, X body, String what) {
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

  /** The pause between database polls of a waiting receive (the builder's, or the default). */
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
    AcquireRequest request = new AcquireRequest(queue, visibilityTimeout, maxMessages, null, null);
    List<Lease> leases = AcquireWait.acquire(
        store,
        () -> call(() -> store.acquire("receiving from mailbox '" + queue + "'", request, holder, clock), "receive"),
        waitTime,
        pollInterval,
        closed::get);
    return leases.isEmpty() ? List.of() : toMessages(leases);
  }

  private List<Message<T, R>> toMessages(List<Lease> leases) {
    List<Lease> sorted = new ArrayList<>(leases);
    sorted.sort(Comparator.comparingLong(Lease::itemId));
    List<Message<T, R>> out = new ArrayList<>(sorted.size());
    for (Lease l : sorted) {
      T body;
      try {
        body = bodyCodec.decode(l.input() == null ? new byte[0] : l.input());
      } catch (RuntimeException e) {
        String reason = "cannot decode the body with " + bodyCodec + ": " + e;
        LOG.warn("Dead-lettering message {} of mailbox '{}': {}", l.itemId(), queue, reason);
        try {
          store.write("dead-lettering an undecodable message", c -> {
            sql.leases().deadLetter(c, l.itemId(), l.token(), reason, store.now(c, clock));
            return null;
          });
        } catch (RuntimeException again) {
          LOG.warn("Could not dead-letter undecodable message {}; it will be redelivered", l.itemId(), again);
        }
        continue;
      }
      out.add(new JdbcMessage(l, body));
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
    List<RuntimeException> outcomes = call(() -> store.completeAll(handles, clock), "acknowledgeAll");
    Map<String, MailboxException> refused = new LinkedHashMap<>();
    for (int i = 0; i < outcomes.size(); i++) {
      RuntimeException cause = outcomes.get(i);
      if (cause == null) {
        continue;
      }
      try {
        call(() -> {
          throw cause;
        }, "acknowledge");
      } catch (MailboxException mapped) {
        refused.put(messages.get(i).id(), mapped);
      }
    }
    return refused;
  }

  @Override
  public long approximateCount() {
    return call(() -> store.read("counting mailbox '" + queue + "'", c -> sql.inserts().countUnfinished(c, queue)),
        "approximateCount");
  }

  @Override
  public long purge() {
    return call(() -> store.write("purging mailbox '" + queue + "'",
        c -> sql.purges().purgeUnfinished(c, queue)), "purge");
  }

  /**
   * Returns the ids of this mailbox's dead letters ({@code failed} items), oldest first.
   *
   * @return the ids
   */
  public List<String> deadLetteredIds() {
    return call(() -> store.read("listing dead letters of '" + queue + "'", c -> {
      List<String> ids = new ArrayList<>();
      for (long id : sql.reads().failedIds(c, queue)) {
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

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      store.signalItems();
    }
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
    } catch (ItemFinalizedException e) {
      throw new MessageFinalizedException(e.getMessage(), e);
    } catch (LeaseLostException e) {
      throw new ReceiptHandleExpiredException(e.getMessage(), e);
    } catch (StoreUnavailableException e) {
      throw new MailboxConnectionException(op + " failed: " + e.getMessage(), e);
    } catch (TetherStoreException e) {
      throw new MailboxException(op + " failed: " + e.getMessage(), e);
    }
  }

  /** One delivery. */
  private final class JdbcMessage implements Message<T, R> {
    private final long id;
    private final long token;
    private final T body;
    private final int deliveryCount;
    private final Instant enqueuedAt;
    private final String replyTo;

    JdbcMessage(Lease lease, T body) {
      this.id = lease.itemId();
      this.token = lease.token();
      this.body = body;
      this.deliveryCount = lease.deliveryCount();
      this.enqueuedAt = lease.createdAt();
      this.replyTo = lease.replyTo();
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
    public Instant enqueuedAt() {
      return enqueuedAt;
    }

    @Override
    public boolean hasReplyTo() {
      return replyTo != null;
    }

    @Override
    public void acknowledge() {
      call(() -> {
        store.complete(id, token, null, clock);
        return null;
      }, "acknowledge");
    }

    @Override
    public void nack(Duration visibilityTimeout) {
      checkTimeout("visibilityTimeout", visibilityTimeout, MAX_VISIBILITY_TIMEOUT);
      call(() -> store.write("handing back message " + id, c -> {
        sql.leases().nack(c, id, token, visibilityTimeout, store.now(c, clock));
        store.notifyItems(c);
        return null;
      }), "nack");
      store.signalItems();
    }

    @Override
    public void extendVisibility(Duration timeout) {
      checkTimeout("timeout", timeout, MAX_VISIBILITY_TIMEOUT);
      call(() -> store.renew(id, token, timeout, clock), "extendVisibility");
    }

    @Override
    public void reply(R replyBody) {
      if (replyTo == null) {
        throw new ReplyNotAvailableException("message " + id + " of mailbox '" + queue
            + "' was sent without a reply-to mailbox; nothing was sent");
      }
      Objects.requireNonNull(replyBody, "body");
      byte[] bytes = encode(replyCodec, replyBody, "reply");
      call(() -> store.write("replying to message " + id, c -> {
        Instant now = store.now(c, clock);
        sql.leases().touchHeld(c, id, token, now);
        insertReply(c, bytes, now);
        return null;
      }), "reply");
      store.signalItems();
    }

    @Override
    public void replyAndAcknowledge(R replyBody) {
      byte[] bytes = replyTo == null ? null : encode(replyCodec, Objects.requireNonNull(replyBody, "body"), "reply");
      call(() -> store.write("replying to and acknowledging message " + id, c -> {
        Instant now = store.now(c, clock);
        sql.leases().complete(c, id, token, null, now);
        if (bytes != null) {
          insertReply(c, bytes, now);
        }
        return null;
      }), "replyAndAcknowledge");
      if (bytes != null) {
        store.signalItems();
      }
    }

    private void insertReply(Connection c, byte[] bytes, Instant now) throws SQLException {
      TetherStore.QueueSettings settings =
          store.queueSettings(replyTo).orElse(new TetherStore.QueueSettings(maxDeliveries, 0));
      if (settings.capacity() > 0) {
        checkCapacity(c, replyTo, settings.capacity(), "reply mailbox");
      }
      sql.inserts().insert(c, NewWorkItem.builder(replyTo).input(bytes).maxAttempts(settings.maxAttempts()).build(), now);
      store.notifyItems(c);
    }

    @Override
    public void deadLetter(String reason) {
      call(() -> store.write("dead-lettering message " + id, c -> {
        sql.leases().deadLetter(c, id, token, reason, store.now(c, clock));
        return null;
      }), "deadLetter");
    }

    @Override
    public String toString() {
      return "JdbcMessage[id=" + id + ", queue=" + queue + ", delivery=" + deliveryCount
          + ", handle=" + receiptHandle() + "]";
    }
  }

  /** Builds a {@link JdbcMailbox}; every setter validates its value at once. Not thread-safe. */
  public static final class Builder<T, R> {
    private final TetherStore store;
    private final String queue;
    private final BodyCodec<T> bodyCodec;
    private final BodyCodec<R> replyCodec;
    private int maxDeliveries = NewWorkItem.DEFAULT_MAX_ATTEMPTS;
    private int capacity;
    private int maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
    private Clock clock;
    private Duration pollInterval;
    private String holder = "mailbox-" + UUID.randomUUID();

    private Builder(TetherStore store, String queue, BodyCodec<T> bodyCodec, BodyCodec<R> replyCodec) {
      this.store = Objects.requireNonNull(store, "store");
      this.queue = QueueName.requireValid(queue, "queue");
      this.bodyCodec = Objects.requireNonNull(bodyCodec, "bodyCodec");
      this.replyCodec = Objects.requireNonNull(replyCodec, "replyCodec");
    }

    /**
     * Sets the total deliveries after which a message whose lease expired is dead-lettered.
     *
     * @param maxDeliveries at least 1
     * @return this builder
     * @throws IllegalArgumentException if less than 1
     */
    public Builder<T, R> maxDeliveries(int maxDeliveries) {
      if (maxDeliveries < 1) {
        throw new IllegalArgumentException("maxDeliveries must be >= 1, was " + maxDeliveries);
      }
      this.maxDeliveries = maxDeliveries;
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
     * Sets the pause between database polls of a waiting receive. Sends in this process wake
     * receivers at once, and so do other processes' sends on PostgreSQL with notifications on;
     * the poll finds the rest (delayed messages coming due, expired leases, hand-backs by other
     * processes, and on SQLite other processes' sends). Default {@link
     * #DEFAULT_NOTIFIED_POLL_INTERVAL} (1 s) on PostgreSQL with notifications on, else {@link
     * #DEFAULT_POLL_INTERVAL} (100 ms).
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
     * Builds the mailbox.
     *
     * @return the mailbox
     */
    public JdbcMailbox<T, R> build() {
      return new JdbcMailbox<>(this);
    }
  }
}
