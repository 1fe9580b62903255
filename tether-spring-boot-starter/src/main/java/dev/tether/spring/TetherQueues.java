package dev.tether.spring;

import dev.tether.Codec;
import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.TetherStore;
import dev.tether.mailbox.SerializationException;
import java.sql.Connection;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Sends messages to Tether queues from application code, inside the caller's Spring transaction
 * when there is one.
 *
 * <pre>{@code
 * @Transactional
 * public void placeOrder(Order order) {
 *   orders.save(order);
 *   queues.send("invoices", new MakeInvoice(order.id())); // commits or rolls back with the order
 * }
 * }</pre>
 *
 * <h2>Transactions</h2>
 *
 * When a Spring-managed transaction is active on the application's {@code DataSource} (the one
 * the store uses), the message is written on the transaction's connection: if the transaction
 * rolls back nothing was sent; once it commits the message is visible, other processes'
 * receivers are notified (PostgreSQL) and this process's waiting loops are woken after the
 * commit. Without a transaction, the message is sent in a transaction of its own and is visible
 * when this returns. A transaction that is active on another resource only (another data source,
 * JMS), or a store on its own URL ({@code tether.store.url}) inside a transaction, is refused
 * with {@link IllegalStateException}: Tether cannot join it, and sending outside it would break
 * the promise that a rollback sends nothing.
 *
 * <h2>Bodies</h2>
 *
 * A body is stored with the codec of the queue's handler in this application, if there is one,
 * else by its class: UTF-8 text for a {@code String}, bytes as they are for {@code byte[]},
 * JSON for anything else.
 *
 * <p>Thread-safe. Blocks for the write.
 */
public final class TetherQueues {
  private final TetherStore store;
  private final DataSource transactional; // null: the store is not on the application's DataSource
  private final BodyCodecs codecs;
  private final Map<String, Codec<?>> handlerCodecs;
  private final Map<String, Integer> budgets;
  private final int defaultMaxAttempts;
  private final Map<String, JdbcMailbox<byte[], byte[]>> mailboxes = new ConcurrentHashMap<>();
  private volatile TetherSendObserver observer = TetherSendObserver.NONE;

  /**
   * Creates the sender.
   *
   * @param store the store
   * @param transactional the application's DataSource the store is on (its transactions are
   *     joined), or null when the store has a pool of its own
   * @param codecs codecs by type
   * @param handlerCodecs the request codec of each queue with a handler in this application
   * @param budgets the budget of each queue with a handler in this application
   * @param defaultMaxAttempts the budget of messages to other queues
   */
  public TetherQueues(TetherStore store, DataSource transactional, BodyCodecs codecs,
      Map<String, Codec<?>> handlerCodecs, Map<String, Integer> budgets, int defaultMaxAttempts) {
    this.store = Objects.requireNonNull(store, "store");
    this.transactional = transactional;
    this.codecs = codecs;
    this.handlerCodecs = Map.copyOf(handlerCodecs);
    this.budgets = Map.copyOf(budgets);
    this.defaultMaxAttempts = defaultMaxAttempts;
  }

  /**
   * Sends a message to a queue, inside the caller's transaction when there is one.
   *
   * @param queue the queue
   * @param body the body; not null
   * @return the message id
   * @throws SerializationException if the body cannot be encoded or is too large (nothing sent)
   * @throws dev.tether.mailbox.MailboxException on a database error
   * @throws IllegalStateException if a transaction is active that the message cannot join
   */
  @SuppressWarnings("unchecked")
  public String send(String queue, Object body) {
    Objects.requireNonNull(body, "body");
    Codec<Object> codec = (Codec<Object>) handlerCodecs.get(queue);
    return send(queue, body, codec != null ? codec : codecs.forValue(body));
  }

  /**
   * Sends a message encoded with the given codec, inside the caller's transaction when there is
   * one.
   *
   * @param queue the queue
   * @param body the body; not null
   * @param codec the codec
   * @param <T> the body type
   * @return the message id
   * @throws SerializationException if the body cannot be encoded or is too large (nothing sent)
   * @throws dev.tether.mailbox.MailboxException on a database error
   * @throws IllegalStateException if a transaction is active that the message cannot join
   */
  public <T> String send(String queue, T body, Codec<T> codec) {
    Objects.requireNonNull(queue, "queue");
    Objects.requireNonNull(body, "body");
    Objects.requireNonNull(codec, "codec");
    byte[] bytes;
    try {
      bytes = codec.encode(body);
    } catch (RuntimeException e) {
      throw new SerializationException("cannot encode the message body for queue '" + queue + "' with "
          + codec + ": " + e.getMessage() + "; nothing was sent", e);
    }
    JdbcMailbox<byte[], byte[]> mailbox = mailbox(queue);
    if (!TransactionSynchronizationManager.isActualTransactionActive()) {
      return observer.observe(queue, headers -> mailbox.send(bytes, headers));
    }
    if (transactional == null) {
      throw new IllegalStateException("a transaction is active, but the Tether store is not on the"
          + " application's DataSource (tether.store.url is set), so the message to queue '" + queue
          + "' cannot join it; nothing was sent: leave tether.store.url unset to use the application's"
          + " DataSource, or send outside the transaction");
    }
    if (!TransactionSynchronizationManager.hasResource(transactional)) {
      throw new IllegalStateException("the active transaction is not on the application's DataSource"
          + " that the Tether store uses, so the message to queue '" + queue + "' cannot join it;"
          + " nothing was sent: run the send in a transaction of that DataSource's transaction manager");
    }
    Connection connection = DataSourceUtils.getConnection(transactional);
    String id;
    try {
      id = observer.observe(queue, headers -> mailbox.send(connection, bytes, headers));
    } finally {
      DataSourceUtils.releaseConnection(connection, transactional);
    }
    if (TransactionSynchronizationManager.isSynchronizationActive()) {
      TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
        @Override
        public void afterCommit() {
          mailbox.wakeReceivers();
        }
      });
    }
    return id;
  }

  /**
   * Sets what wraps each send (tracing); {@link TetherSendObserver#NONE} by default.
   *
   * @param observer the observer
   */
  public void observer(TetherSendObserver observer) {
    this.observer = Objects.requireNonNull(observer, "observer");
  }

  /**
   * Returns the store messages are sent to.
   *
   * @return the store
   */
  public TetherStore store() {
    return store;
  }

  private JdbcMailbox<byte[], byte[]> mailbox(String queue) {
    return mailboxes.computeIfAbsent(queue, q -> JdbcMailbox.builder(store, q, Codec.bytes(), Codec.bytes())
        .maxAttempts(budgets.getOrDefault(q, defaultMaxAttempts))
        .holder("sender")
        .build());
  }

  /** Closes the mailboxes this sender opened (not the store); idempotent. */
  public void close() {
    mailboxes.values().forEach(JdbcMailbox::close);
    mailboxes.clear();
  }
}
