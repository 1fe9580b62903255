package dev.tether.mailbox;

import dev.tether.QueueName;
import dev.tether.Ticker;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link Mailbox} held in memory, for tests, single-process pipelines and as the reference
 * implementation of the Mailbox contract. Nothing survives the process.
 *
 * <h2>Guarantees</h2>
 *
 * <ul>
 *   <li><b>Thread-safe.</b> Every operation, on the mailbox and on its {@link Message}s, is atomic
 *       with respect to the others; one lock per mailbox guards the state.
 *   <li><b>One clock.</b> Every instant ({@link Message#enqueuedAt()}, lease expiries, nack delays,
 *       {@link DeadLetter#deadLetteredAt()}) and every expiry decision comes from the configured
 *       {@link Clock}, read at the moment of each operation. There is no reaper thread: an expired
 *       lease is receivable again as soon as the clock says so, with its delivery count increased
 *       and a new receipt handle. The {@link Ticker} only bounds how long {@link #receive} waits in
 *       real time.
 *   <li><b>Fencing.</b> A receipt handle stays valid until its message is delivered again or
 *       finalized (an expired lease not yet taken over may still be acknowledged or extended).
 *       Through a stale handle every operation throws {@link ReceiptHandleExpiredException} and
 *       changes nothing; a second finalization through the same handle throws {@link
 *       MessageFinalizedException}.
 *   <li><b>One budget.</b> Each message gets {@link Builder#maxAttempts(int) maxAttempts}
 *       charged attempts: a delivery is charged when it is received, and refunded when the worker
 *       hands it back ({@link Message#handBack()}). A message whose lease expired on its last
 *       attempt is dead-lettered at the moment it would be delivered again (by {@link #receive}),
 *       with a reason such as {@code "lease expired on attempt 3 of 3"}; a {@link Message#nack}
 *       of its last attempt dead-letters it too. A message sent with a reply-to mailbox that ends
 *       as a dead letter sends its requester an {@link ErrorReply} (after the mailbox's lock is
 *       released; a failed send is logged).
 *   <li><b>Checkpoints.</b> {@link Message#checkpoint(byte[])} keeps the latest checkpoint with the
 *       message, for its next delivery.
 *   <li><b>Order.</b> {@link #receive} returns visible messages oldest first (in send order).
 *   <li><b>Atomic reply.</b> {@link Message#replyAndAcknowledge} either sends the reply and
 *       finalizes the message, or does neither; while the reply is being sent the message cannot
 *       be taken over, even if its lease expires meanwhile. No lock is held while another mailbox
 *       is called, so two mailboxes replying to each other cannot deadlock.
 *   <li><b>Dead letters</b> are kept in the mailbox ({@link #deadLetters()}) until redriven
 *       (they do not count towards the capacity and are not bounded: watch their number), can be
 *       {@linkplain #redrive(String) redriven}, and are also sent to the {@link Builder#deadLetterTo
 *       dead-letter mailbox} when one is configured (a failed forward is logged, the local copy
 *       kept).
 *   <li><b>Blocking.</b> Only {@link #receive} blocks, for at most its wait time; {@link #close()}
 *       wakes it. A message operation through a handle that is itself sending a reply waits for
 *       that send to finish.
 * </ul>
 *
 * <p>After {@link #close()}, {@link #send} throws {@link IllegalStateException} and {@link
 * #receive} returns an empty list; operations on messages already received keep working, so that
 * work in progress can still be acknowledged or handed back.
 *
 * @param <T> the body type of the messages
 * @param <R> the body type of replies
 */
public final class InMemoryMailbox<T, R> implements Mailbox<T, R> {
  /** Default capacity: unbounded. */
  public static final int UNBOUNDED = 0;

  /**
   * Longest single wait of a blocked {@link #receive} before it re-reads the clock, so that a
   * lease expiring by a clock that is moved by hand (or jumps) is noticed.
   */
  static final long POLL_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  private static final Logger log = LoggerFactory.getLogger(InMemoryMailbox.class);

  final String name;
  final Clock clock;
  private final Ticker ticker;
  private final int capacity;
  final int maxAttempts;
  private final Mailbox<DeadLetter<T>, ?> deadLetterTo;
  private final String handlePrefix = UUID.randomUUID().toString();
  private final AtomicLong handleSequence = new AtomicLong();

  final ReentrantLock lock = new ReentrantLock();
  /** Signalled when a message may have become receivable, or on close. */
  final Condition available = lock.newCondition();
  /** Signalled when a reply send through some handle finished. */
  final Condition unpinned = lock.newCondition();

  // Guarded by lock.
  final TreeMap<Long, Entry> bySequence = new TreeMap<>();
  final Map<String, Entry> byId = new HashMap<>();
  private final LinkedHashMap<String, DeadEntry> dead = new LinkedHashMap<>();
  private long nextSequence;
  private boolean closed;

  private InMemoryMailbox(Builder<T, R> b) {
    this.name = b.name;
    this.clock = b.clock;
    this.ticker = b.ticker;
    this.capacity = b.capacity;
    this.maxAttempts = b.maxAttempts;
    this.deadLetterTo = b.deadLetterTo;
  }

  /**
   * Returns a builder for a mailbox named {@code name}.
   *
   * @param name the queue name, used in logs and error messages; see {@link QueueName} for the
   *     rule
   * @param <T> the body type
   * @param <R> the reply body type
   * @return a new builder with the defaults
   * @throws IllegalArgumentException if {@code name} breaks the {@link QueueName} rule
   */
  public static <T, R> Builder<T, R> builder(String name) {
    return new Builder<>(name);
  }

  @Override
  public String name() {
    return name;
  }

  /**
   * Returns the configured capacity.
   *
   * @return most messages not yet finalized, or {@link #UNBOUNDED}
   */
  public int capacity() {
    return capacity;
  }

  /**
   * Returns the budget of each message.
   *
   * @return charged attempts after which a failing or expiring message is dead-lettered
   */
  public int maxAttempts() {
    return maxAttempts;
  }

  /**
   * {@inheritDoc}
   *
   * @throws NullPointerException if {@code body} is null
   */
  @Override
  public String send(T body) {
    return enqueue(Objects.requireNonNull(body, "body"), null, null, null);
  }

  /**
   * {@inheritDoc}
   *
   * @throws NullPointerException if an argument is null
   * @throws IllegalStateException if this mailbox is closed
   */
  @Override
  public String sendReply(T body, String inReplyTo) {
    return enqueue(Objects.requireNonNull(body, "body"), null,
        Objects.requireNonNull(inReplyTo, "inReplyTo"), null);
  }

  /**
   * {@inheritDoc}
   *
   * @throws NullPointerException if {@code error} is null
   * @throws IllegalStateException if this mailbox is closed
   */
  @Override
  public String sendErrorReply(ErrorReply error) {
    Objects.requireNonNull(error, "error");
    return enqueue(null, null, error.requestId(), error);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Any {@link Mailbox} implementation is accepted as {@code replyTo}.
   *
   * @throws NullPointerException if {@code body} or {@code replyTo} is null
   * @throws IllegalStateException if this mailbox is closed
   */
  @Override
  public String send(T body, Mailbox<R, ?> replyTo) {
    return enqueue(Objects.requireNonNull(body, "body"), Objects.requireNonNull(replyTo, "replyTo"),
        null, null);
  }

  private String enqueue(T body, Mailbox<R, ?> replyTo, String inReplyTo, ErrorReply error) {
    String id = UUID.randomUUID().toString();
    lock.lock();
    try {
      if (closed) {
        throw new IllegalStateException(
            "mailbox '" + name + "' is closed; message not sent. Send to an open mailbox.");
      }
      if (capacity != UNBOUNDED && byId.size() >= capacity) {
        throw new MailboxFullException(
            "mailbox '"
                + name
                + "' is full: "
                + byId.size()
                + " messages not yet finalized, capacity "
                + capacity
                + "; message not sent. Acknowledge messages, retry later or raise the capacity.");
      }
      Instant now = clock.instant();
      Entry e = new Entry(id, nextSequence++, body, replyTo, now, inReplyTo, error);
      e.visibleAt = now;
      bySequence.put(e.sequence, e);
      byId.put(id, e);
      available.signal();
    } finally {
      lock.unlock();
    }
    return id;
  }

  /**
   * {@inheritDoc}
   *
   * <p>A blocked receive re-reads the clock at least every 50 ms, so a lease that expires by the
   * clock while it waits is received within that time. The wait is measured with the configured
   * {@link Ticker}.
   *
   * @throws InvalidParameterException if an argument is out of range
   * @throws NullPointerException if a duration is null
   */
  @Override
  public List<Message<T, R>> receive(
      int maxMessages, Duration visibilityTimeout, Duration waitTime) {
    checkMaxMessages(maxMessages);
    checkVisibility("visibilityTimeout", visibilityTimeout);
    checkWait(waitTime);
    long waitNanos = waitTime.toNanos();
    long deadline = ticker.read() + waitNanos;
    List<Message<T, R>> received = new ArrayList<>();
    List<Burial> newlyDead = new ArrayList<>();
    lock.lock();
    try {
      while (true) {
        if (closed) {
          return List.of();
        }
        long nowNanos = System.nanoTime(); // no later than the clock's reading the leases count from
        Instant now = clock.instant();
        Instant nextVisible = collect(now, nowNanos, maxMessages, visibilityTimeout, received, newlyDead);
        if (!received.isEmpty()) {
          return received;
        }
        long remaining = deadline - ticker.read();
        if (remaining <= 0) {
          return received;
        }
        long slice = Math.min(remaining, POLL_SLICE_NANOS);
        if (nextVisible != null) {
          long untilVisible = Duration.between(now, nextVisible).toNanos();
          slice = Math.max(1, Math.min(slice, untilVisible));
        }
        try {
          available.awaitNanos(slice);
        } catch (InterruptedException interrupted) {
          Thread.currentThread().interrupt();
          return received;
        }
      }
    } finally {
      lock.unlock();
      forward(newlyDead);
    }
  }

  /**
   * Leases up to {@code max} receivable entries into {@code out}, oldest first, dead-lettering
   * expired leases that have used up the delivery budget. Caller holds the lock.
   *
   * @return the earliest instant at which a currently invisible entry becomes receivable, or null
   */
  private Instant collect(
      Instant now,
      long nowNanos,
      int max,
      Duration visibilityTimeout,
      List<Message<T, R>> out,
      List<Burial> newlyDead) {
    Instant nextVisible = null;
    Iterator<Entry> it = bySequence.values().iterator();
    while (it.hasNext() && out.size() < max) {
      Entry e = it.next();
      if (e.pinnedBy != null) {
        continue; // a reply is being sent through the current handle; it may not be taken over
      }
      if (now.isBefore(e.visibleAt)) {
        if (nextVisible == null || e.visibleAt.isBefore(nextVisible)) {
          nextVisible = e.visibleAt;
        }
        continue;
      }
      if (e.lease != null && e.attempts >= maxAttempts) {
        it.remove();
        byId.remove(e.id);
        String reason = "lease expired on attempt " + e.attempts + " of " + maxAttempts
            + " (delivery " + e.deliveryCount + ")";
        newlyDead.add(bury(e, reason, now));
        log.warn("Mailbox '{}': message {} dead-lettered: {}", name, e.id, reason);
        continue;
      }
      if (e.lease != null) {
        log.debug(
            "Mailbox '{}': lease of message {} expired on delivery {}; redelivering",
            name,
            e.id,
            e.deliveryCount);
      }
      e.deliveryCount++;
      e.attempts++; // charged now; a hand-back refunds it
      InMemoryDelivery<T, R> d = new InMemoryDelivery<>(this, e, handlePrefix + "-" + handleSequence.incrementAndGet(),
          nowNanos);
      e.lease = d;
      e.visibleAt = now.plus(visibilityTimeout);
      out.add(d);
    }
    return nextVisible;
  }

  /**
   * Moves {@code e} (already removed from the live maps) to the dead letters and returns what is
   * left to do outside the lock (forwarding, the requester's error reply). Caller holds lock.
   */
  Burial bury(Entry e, String reason, Instant now) {
    e.lease = null;
    DeadLetter<T> letter =
        new DeadLetter<>(e.id, e.body, reason, e.deliveryCount, e.attempts, e.enqueuedAt, now);
    dead.put(e.id, new DeadEntry(e, letter));
    ErrorReply error = e.replyTo == null ? null : new ErrorReply(e.id, reason, e.attempts, false);
    return new Burial(letter, e.replyTo, error);
  }

  /** A dead letter and what it still owes outside the lock. */
  final class Burial {
    final DeadLetter<T> letter;
    final Mailbox<R, ?> replyTo;
    final ErrorReply error;

    Burial(DeadLetter<T> letter, Mailbox<R, ?> replyTo, ErrorReply error) {
      this.letter = letter;
      this.replyTo = replyTo;
      this.error = error;
    }
  }

  /**
   * Answers the requesters of dead letters with error replies and sends the dead letters to the
   * dead-letter mailbox, if any. Called without the lock; a failed send is logged.
   */
  void forward(List<Burial> burials) {
    for (Burial b : burials) {
      if (b.error != null) {
        try {
          b.replyTo.sendErrorReply(b.error);
        } catch (RuntimeException e) {
          log.warn("Mailbox '{}': could not send the error reply of dead letter {} to mailbox"
              + " '{}'; its requester is not answered", name, b.letter.messageId(),
              b.replyTo.name(), e);
        }
      }
      if (deadLetterTo == null || b.letter.body() == null) {
        continue;
      }
      try {
        deadLetterTo.send(b.letter);
      } catch (RuntimeException e) {
        log.warn(
            "Mailbox '{}': could not forward dead letter {} to mailbox '{}'; it is kept in"
                + " deadLetters() only",
            name,
            b.letter.messageId(),
            deadLetterTo.name(),
            e);
      }
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Exact for this implementation: counts visible, invisible and expired-but-not-yet-redelivered
   * messages, not dead letters.
   */
  @Override
  public long approximateCount() {
    lock.lock();
    try {
      return byId.size();
    } finally {
      lock.unlock();
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Dead letters are not affected.
   */
  @Override
  public long purge() {
    lock.lock();
    try {
      long n = byId.size();
      for (Entry e : byId.values()) {
        e.lease = null;
      }
      byId.clear();
      bySequence.clear();
      if (n > 0) {
        log.info("Mailbox '{}': purged {} messages", name, n);
      }
      return n;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Returns the dead letters kept in this mailbox, oldest first. Redriven messages are no longer
   * listed.
   *
   * @return an immutable snapshot
   */
  public List<DeadLetter<T>> deadLetters() {
    lock.lock();
    try {
      List<DeadLetter<T>> out = new ArrayList<>(dead.size());
      for (DeadEntry d : dead.values()) {
        out.add(d.letter);
      }
      return List.copyOf(out);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Makes a dead letter visible again at once, with the same id, body, reply-to and enqueue
   * instant, its delivery count kept and a fresh budget (its charged attempts start again from
   * zero). Receipt handles of earlier deliveries stay stale.
   *
   * @param messageId the id of a dead letter of this mailbox
   * @return true if it was redriven, false if this mailbox holds no dead letter with that id
   * @throws MailboxFullException if the mailbox is at its capacity; nothing changed
   */
  public boolean redrive(String messageId) {
    Objects.requireNonNull(messageId, "messageId");
    lock.lock();
    try {
      DeadEntry d = dead.get(messageId);
      if (d == null) {
        return false;
      }
      requireRoomFor(1, "redrive message " + messageId);
      dead.remove(messageId);
      revive(d.entry);
      return true;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Redrives every dead letter (see {@link #redrive(String)}), oldest first; all or none.
   *
   * @return how many were redriven
   * @throws MailboxFullException if not all of them fit within the capacity; nothing changed
   */
  public int redriveAll() {
    lock.lock();
    try {
      int n = dead.size();
      if (n == 0) {
        return 0;
      }
      requireRoomFor(n, "redrive all " + n + " dead letters");
      for (DeadEntry d : dead.values()) {
        revive(d.entry);
      }
      dead.clear();
      log.info("Mailbox '{}': redrove {} dead letters", name, n);
      return n;
    } finally {
      lock.unlock();
    }
  }

  private void requireRoomFor(int n, String what) {
    if (capacity != UNBOUNDED && byId.size() + n > capacity) {
      throw new MailboxFullException(
          "mailbox '"
              + name
              + "' cannot "
              + what
              + ": "
              + byId.size()
              + " messages not yet finalized, capacity "
              + capacity
              + "; nothing changed. Acknowledge messages first or raise the capacity.");
    }
  }

  private void revive(Entry e) {
    e.lease = null;
    e.attempts = 0;
    e.pinnedBy = null;
    e.visibleAt = clock.instant();
    bySequence.put(e.sequence, e);
    byId.put(e.id, e);
    available.signalAll();
  }

  /**
   * {@inheritDoc}
   *
   * <p>Idempotent. Messages stay in memory; deliveries already received keep working.
   */
  @Override
  public void close() {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      available.signalAll();
    } finally {
      lock.unlock();
    }
    log.debug("Mailbox '{}' closed", name);
  }

  /**
   * Returns whether {@link #close()} was called.
   *
   * @return true once closed
   */
  public boolean isClosed() {
    lock.lock();
    try {
      return closed;
    } finally {
      lock.unlock();
    }
  }

  @Override
  public String toString() {
    lock.lock();
    try {
      return "InMemoryMailbox['"
          + name
          + "', messages="
          + byId.size()
          + ", deadLetters="
          + dead.size()
          + ", capacity="
          + (capacity == UNBOUNDED ? "unbounded" : capacity)
          + ", maxAttempts="
          + maxAttempts
          + (closed ? ", closed" : "")
          + "]";
    } finally {
      lock.unlock();
    }
  }

  // ---------------------------------------------------------------- validation

  private void checkMaxMessages(int maxMessages) {
    if (maxMessages < 1 || maxMessages > MAX_MESSAGES_PER_RECEIVE) {
      throw new InvalidParameterException(
          "mailbox '"
              + name
              + "': maxMessages must be 1.."
              + MAX_MESSAGES_PER_RECEIVE
              + ", was "
              + maxMessages);
    }
  }

  void checkVisibility(String what, Duration d) {
    Objects.requireNonNull(d, what);
    if (d.isNegative() || d.compareTo(MAX_VISIBILITY_TIMEOUT) > 0) {
      throw new InvalidParameterException(
          "mailbox '"
              + name
              + "': "
              + what
              + " must be between 0 and "
              + MAX_VISIBILITY_TIMEOUT
              + ", was "
              + d);
    }
  }

  private void checkWait(Duration d) {
    Objects.requireNonNull(d, "waitTime");
    if (d.isNegative() || d.compareTo(MAX_WAIT_TIME) > 0) {
      throw new InvalidParameterException(
          "mailbox '" + name + "': waitTime must be between 0 and " + MAX_WAIT_TIME + ", was " + d);
    }
  }

  // ---------------------------------------------------------------- state

  /** A message not yet finalized (or a dead letter's original). Guarded by the mailbox lock. */
  final class Entry {
    final String id;
    final long sequence;
    final T body;
    final Mailbox<R, ?> replyTo;
    final Instant enqueuedAt;
    /** The request this message answers, or null. */
    final String inReplyTo;
    /** Non-null for an error reply (then {@code body} is null). */
    final ErrorReply error;
    int deliveryCount;
    /** Charged attempts, counting a delivery in progress. */
    int attempts;
    /** The latest progress checkpoint, or null. */
    byte[] checkpoint;
    /** When the entry is receivable: the lease expiry while leased, else when visible again. */
    Instant visibleAt;
    /** The delivery holding the lease (valid until taken over or finalized), or null. */
    InMemoryDelivery<T, R> lease;
    /** The delivery currently sending a reply; while set, the entry cannot be taken over. */
    InMemoryDelivery<T, R> pinnedBy;

    Entry(String id, long sequence, T body, Mailbox<R, ?> replyTo, Instant enqueuedAt,
        String inReplyTo, ErrorReply error) {
      this.id = id;
      this.sequence = sequence;
      this.body = body;
      this.replyTo = replyTo;
      this.enqueuedAt = enqueuedAt;
      this.inReplyTo = inReplyTo;
      this.error = error;
    }
  }

  private final class DeadEntry {
    final Entry entry;
    final DeadLetter<T> letter;

    DeadEntry(Entry entry, DeadLetter<T> letter) {
      this.entry = entry;
      this.letter = letter;
    }
  }

  // ---------------------------------------------------------------- builder

  /**
   * Builds an {@link InMemoryMailbox}; each setter validates its value at once. Not thread-safe.
   *
   * @param <T> the body type
   * @param <R> the reply body type
   */
  public static final class Builder<T, R> {
    final String name;
    private Clock clock = Clock.systemUTC();
    private Ticker ticker = Ticker.system();
    private int capacity = UNBOUNDED;
    private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
    private Mailbox<DeadLetter<T>, ?> deadLetterTo;

    private Builder(String name) {
      this.name = QueueName.requireValid(name, "mailbox");
    }

    /**
     * Sets the clock for every instant and every expiry decision. Default {@link
     * Clock#systemUTC()}.
     *
     * @param clock the clock
     * @return this builder
     * @throws NullPointerException if {@code clock} is null
     */
    public Builder<T, R> clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /**
     * Sets the monotonic ticker that bounds how long {@link #receive} waits. Default {@link
     * Ticker#system()}. With a ticker that does not move by itself, a receive with a non-zero wait
     * returns only when a message arrives, the mailbox closes or the ticker is advanced.
     *
     * @param ticker the ticker
     * @return this builder
     * @throws NullPointerException if {@code ticker} is null
     */
    public Builder<T, R> ticker(Ticker ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /**
     * Sets the most messages not yet finalized; beyond it {@link #send} throws {@link
     * MailboxFullException}. Default {@link #UNBOUNDED}.
     *
     * @param capacity at least 1, or {@link #UNBOUNDED} (0)
     * @return this builder
     * @throws IllegalArgumentException if {@code capacity} is negative
     */
    public Builder<T, R> capacity(int capacity) {
      if (capacity < 0) {
        throw new IllegalArgumentException(
            "capacity must be >= 1, or 0 for unbounded, was " + capacity);
      }
      this.capacity = capacity;
      return this;
    }

    /**
     * Sets the budget of each message: the charged attempts (see {@link Message#attempt()}) after
     * which a message that fails or whose lease expires is dead-lettered instead of delivered
     * again. Default {@link Mailbox#DEFAULT_MAX_ATTEMPTS}.
     *
     * @param maxAttempts at least 1
     * @return this builder
     * @throws IllegalArgumentException if {@code maxAttempts < 1}
     */
    public Builder<T, R> maxAttempts(int maxAttempts) {
      if (maxAttempts < 1) {
        throw new IllegalArgumentException("maxAttempts must be >= 1, was " + maxAttempts);
      }
      this.maxAttempts = maxAttempts;
      return this;
    }

    /**
     * Also sends every dead letter to {@code mailbox} (after it is recorded here, outside any
     * lock). A failed send is logged as a warning; the dead letter stays in {@link
     * #deadLetters()}. Default: none.
     *
     * @param mailbox the dead-letter mailbox
     * @return this builder
     * @throws NullPointerException if {@code mailbox} is null
     */
    public Builder<T, R> deadLetterTo(Mailbox<DeadLetter<T>, ?> mailbox) {
      this.deadLetterTo = Objects.requireNonNull(mailbox, "mailbox");
      return this;
    }

    /**
     * Builds the mailbox and logs its effective configuration at debug level.
     *
     * @return a new, open, empty mailbox
     */
    public InMemoryMailbox<T, R> build() {
      InMemoryMailbox<T, R> mailbox = new InMemoryMailbox<>(this);
      if (log.isDebugEnabled()) {
        log.debug(
            "Mailbox '{}' built: capacity={}, maxAttempts={}, deadLetterTo={}, clock={}",
            name,
            capacity == UNBOUNDED ? "unbounded" : capacity,
            maxAttempts,
            deadLetterTo == null ? "none" : "'" + deadLetterTo.name() + "'",
            clock);
      }
      return mailbox;
    }
  }
}
