package dev.tether.jdbc;

import dev.tether.QueueName;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * An item to enqueue. Immutable; build with {@link #builder(String)}, every setter validates its
 * value at once.
 */
public final class NewWorkItem {
  /** Default budget: {@value} charged attempts (the first included). */
  public static final int DEFAULT_MAX_ATTEMPTS = dev.tether.mailbox.Mailbox.DEFAULT_MAX_ATTEMPTS;

  /**
   * Largest input, and largest output a {@link LeaseManager} stores: {@value} bytes (64 MiB, the
   * ceiling of {@link JdbcMailbox.Builder#maxBodyBytes(int)}). Larger data belongs in a blob store,
   * with a reference in the item.
   */
  public static final int MAX_DATA_BYTES = 64 * 1024 * 1024;

  private final String queue;
  private final byte[] input;
  private final String taskId;
  private final String workType;
  private final int priority;
  private final int maxAttempts;
  private final Duration delay;
  private final String idempotencyKey;
  private final String replyTo;
  private final Long replyOf;
  private final boolean errorReply;
  private final Map<String, String> headers;

  private NewWorkItem(Builder b) {
    this.queue = b.queue;
    this.input = b.input;
    this.taskId = b.taskId;
    this.workType = b.workType;
    this.priority = b.priority;
    this.maxAttempts = b.maxAttempts;
    this.delay = b.delay;
    this.idempotencyKey = b.idempotencyKey;
    this.replyTo = b.replyTo;
    this.replyOf = b.replyOf;
    this.errorReply = b.errorReply;
    this.headers = b.headers;
  }

  /**
   * Returns a builder for an item on {@code queue}.
   *
   * @param queue the queue name; see {@link QueueName} for the rule
   * @return the builder
   * @throws IllegalArgumentException if the queue name breaks the {@link QueueName} rule
   */
  public static Builder builder(String queue) {
    return new Builder(queue);
  }

  /**
   * Returns an item on {@code queue} with a UTF-8 text input and defaults otherwise.
   *
   * @param queue the queue
   * @param input the input text, or null
   * @return the item
   */
  public static NewWorkItem of(String queue, String input) {
    return builder(queue).input(input).build();
  }

  /** @return the queue */
  public String queue() {
    return queue;
  }

  /** @return a copy of the input bytes, or null */
  public byte[] input() {
    return input == null ? null : input.clone();
  }

  byte[] inputUnsafe() {
    return input;
  }

  /** @return the task id, or null */
  public String taskId() {
    return taskId;
  }

  /** @return the work type, or null */
  public String workType() {
    return workType;
  }

  /** @return the priority; higher is acquired first */
  public int priority() {
    return priority;
  }

  /** @return the budget: charged attempts before the item is dead-lettered */
  public int maxAttempts() {
    return maxAttempts;
  }

  /** @return how long after enqueueing the item becomes available */
  public Duration delay() {
    return delay;
  }

  /** @return the idempotency key, or null */
  public String idempotencyKey() {
    return idempotencyKey;
  }

  /** @return the reply-to queue, or null */
  public String replyTo() {
    return replyTo;
  }

  /**
   * Returns the headers stored with the item (see {@link Builder#headers}).
   *
   * @return an unmodifiable map, empty when none
   */
  public Map<String, String> headers() {
    return headers;
  }

  /** The headers as the {@code headers} column stores them, or null for none. */
  String headersColumn() {
    return Headers.encode(headers);
  }

  /** The request this item answers, or null (replies only). */
  Long replyOf() {
    return replyOf;
  }

  /** Whether this item is an error reply. */
  boolean errorReply() {
    return errorReply;
  }

  static byte[] checkSize(byte[] data, String what) {
    if (data.length > MAX_DATA_BYTES) {
      throw new IllegalArgumentException(what + " is " + data.length + " bytes, over the limit of "
          + MAX_DATA_BYTES + " bytes (NewWorkItem.MAX_DATA_BYTES); nothing was written: store the"
          + " data elsewhere and pass a reference");
    }
    return data;
  }

  /** Builds a {@link NewWorkItem}. Not thread-safe. */
  public static final class Builder {
    private final String queue;
    private byte[] input;
    private String taskId;
    private String workType;
    private int priority;
    private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
    private Duration delay = Duration.ZERO;
    private String idempotencyKey;
    private String replyTo;
    private Long replyOf;
    private boolean errorReply;
    private Map<String, String> headers = Map.of();

    private Builder(String queue) {
      this.queue = QueueName.requireValid(queue, "queue");
    }

    /**
     * Sets the input as UTF-8 text.
     *
     * @param text the input, or null
     * @return this builder
     * @throws IllegalArgumentException if its UTF-8 encoding is over {@link #MAX_DATA_BYTES}
     */
    public Builder input(String text) {
      this.input = text == null ? null : checkSize(text.getBytes(StandardCharsets.UTF_8), "input");
      return this;
    }

    /**
     * Sets the input bytes (copied).
     *
     * @param bytes the input, or null
     * @return this builder
     * @throws IllegalArgumentException if over {@link #MAX_DATA_BYTES}
     */
    public Builder input(byte[] bytes) {
      this.input = bytes == null ? null : checkSize(bytes, "input").clone();
      return this;
    }

    /**
     * Sets the task id (a filter for {@link LeaseManager#acquire(AcquireRequest)}).
     *
     * @param taskId the task id, or null
     * @return this builder
     */
    public Builder taskId(String taskId) {
      this.taskId = taskId;
      return this;
    }

    /**
     * Sets the work type (a filter for {@link LeaseManager#acquire(AcquireRequest)}).
     *
     * @param workType the work type, or null
     * @return this builder
     */
    public Builder workType(String workType) {
      this.workType = workType;
      return this;
    }

    /**
     * Sets the priority; higher priorities are acquired first.
     *
     * @param priority any int
     * @return this builder
     */
    public Builder priority(int priority) {
      this.priority = priority;
      return this;
    }

    /**
     * Sets the item's budget: the charged attempts (first included) after which it is
     * dead-lettered. Every delivery is charged except one its worker hands back itself
     * (shutdown, drain).
     *
     * @param maxAttempts at least 1
     * @return this builder
     * @throws IllegalArgumentException if less than 1
     */
    public Builder maxAttempts(int maxAttempts) {
      if (maxAttempts < 1) {
        throw new IllegalArgumentException(
            "maxAttempts must be >= 1, was " + maxAttempts);
      }
      this.maxAttempts = maxAttempts;
      return this;
    }

    /**
     * Delays the first availability.
     *
     * @param delay zero or positive
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder delay(Duration delay) {
      Objects.requireNonNull(delay, "delay");
      if (delay.isNegative()) {
        throw new IllegalArgumentException("delay must be >= 0, was " + delay);
      }
      this.delay = delay;
      return this;
    }

    /**
     * Sets an idempotency key: enqueueing another item with the same key on the same queue
     * returns the existing item's id and writes nothing.
     *
     * @param key the key, or null
     * @return this builder
     * @throws IllegalArgumentException if blank
     */
    public Builder idempotencyKey(String key) {
      if (key != null && key.isBlank()) {
        throw new IllegalArgumentException("idempotencyKey must not be blank (use null for none)");
      }
      this.idempotencyKey = key;
      return this;
    }

    /**
     * Sets the queue replies to this item go to.
     *
     * @param replyTo the reply queue (see {@link QueueName} for the rule), or null
     * @return this builder
     * @throws IllegalArgumentException if not null and it breaks the {@link QueueName} rule
     */
    public Builder replyTo(String replyTo) {
      this.replyTo = replyTo == null ? null : QueueName.requireValid(replyTo, "replyTo");
      return this;
    }

    /**
     * Sets the headers: small text attributes stored with the item and read back on every
     * delivery ({@code Message.headers()}), such as a trace context.
     *
     * @param headers at most 32 entries, keys not blank, at most 8 KiB encoded; copied
     * @return this builder
     * @throws IllegalArgumentException if the headers break those limits
     */
    public Builder headers(Map<String, String> headers) {
      this.headers = Headers.checked(java.util.Objects.requireNonNull(headers, "headers"));
      return this;
    }

    /** Marks the item as a reply to request {@code requestId}. */
    Builder replyOf(long requestId) {
      this.replyOf = requestId;
      return this;
    }

    /** Marks the item as an error reply (its input encodes the {@code ErrorReply}). */
    Builder errorReply() {
      this.errorReply = true;
      return this;
    }

    /**
     * Builds the item.
     *
     * @return the item
     */
    public NewWorkItem build() {
      return new NewWorkItem(this);
    }
  }
}
