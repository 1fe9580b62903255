package dev.tether.micrometer;

import dev.tether.loop.MainLoop;
import dev.tether.mailbox.DeadLetterPolicy;
import dev.tether.mailbox.Mailbox;
import dev.tether.mailbox.Message;
import io.micrometer.common.KeyValues;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.transport.Kind;
import io.micrometer.observation.transport.ReceiverContext;
import io.micrometer.observation.transport.SenderContext;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * Traces work from its enqueue to its processing, in another process if need be, with Micrometer
 * Observation: {@link #send} runs the enqueue as a {@value #ENQUEUE} observation (a producer)
 * whose trace context the tracer writes into the message's {@linkplain Message#headers() headers},
 * stored with the item; {@link #loopListener} runs each delivery's handling as a {@value #PROCESS}
 * observation (a consumer) whose parent the tracer reads back from those headers, and keeps it
 * current on the loop's thread while the handler runs (so the handler's own observations nest
 * under it).
 *
 * <pre>{@code
 * TetherTracing tracing = new TetherTracing(observationRegistry);
 * tracing.send(mailbox, request);                         // enqueue, with the caller's trace
 * MainLoop.builder("emails-1", mailbox, handler)
 *     .listener(MainLoop.Listener.all(metrics.loopListener("emails"),
 *         tracing.loopListener("emails")))
 *     .build();
 * }</pre>
 *
 * Without a tracer bridge on the registry (Micrometer Tracing with Brave or OpenTelemetry), the
 * observations still run (for their handlers, such as timers) but nothing is propagated. Low
 * cardinality key values: {@code tether.queue}, {@code tether.outcome}; high cardinality: {@code
 * tether.message.id}, {@code tether.delivery}. Thread-safe.
 */
public final class TetherTracing {
  /** The enqueue's observation name. */
  public static final String ENQUEUE = "tether.enqueue";
  /**
   * The processing's {@code tether.outcome} when none could be recorded: the handler's result
   * could not be acknowledged, or its message handed back, in the store (it is delivered again
   * once its lease expires).
   */
  public static final String UNKNOWN_OUTCOME = "unknown";
  /** The processing's observation name. */
  public static final String PROCESS = "tether.process";

  private final ObservationRegistry registry;

  /**
   * Traces through {@code registry}.
   *
   * @param registry the observation registry (with a tracing handler, for propagation)
   */
  public TetherTracing(ObservationRegistry registry) {
    this.registry = Objects.requireNonNull(registry, "registry");
  }

  /**
   * Sends {@code body} to {@code mailbox} within a {@value #ENQUEUE} observation (a child of the
   * caller's current observation, if any), storing the trace context as the message's headers.
   *
   * @param mailbox the mailbox; it must store headers ({@code JdbcMailbox} does)
   * @param body the body
   * @param <T> the body type
   * @return the new message's id
   * @throws UnsupportedOperationException if the tracer writes a context and the mailbox cannot
   *     store headers
   * @throws RuntimeException whatever the mailbox's send throws (the observation records it)
   */
  public <T> String send(Mailbox<T, ?> mailbox, T body) {
    Objects.requireNonNull(mailbox, "mailbox");
    return send(mailbox.name(), headers -> mailbox.send(body, headers));
  }

  /**
   * Runs an enqueue of the caller's own making within a {@value #ENQUEUE} observation: {@code
   * enqueue} gets the headers to store with the item (the trace context) and returns the new
   * item's id. For enqueues that do not go through a {@link Mailbox}, such as {@code
   * LeaseManager.enqueue(connection, NewWorkItem.builder(queue)...headers(headers).build())}
   * inside the caller's transaction.
   *
   * @param queue the queue enqueued to
   * @param enqueue writes the item with the given headers and returns its id
   * @return the id {@code enqueue} returned
   * @throws RuntimeException whatever {@code enqueue} throws (the observation records it)
   */
  public String send(String queue, Function<Map<String, String>, String> enqueue) {
    Objects.requireNonNull(queue, "queue");
    Objects.requireNonNull(enqueue, "enqueue");
    EnqueueContext context = new EnqueueContext(queue);
    Observation observation = Observation.createNotStarted(ENQUEUE, () -> context, registry)
        .lowCardinalityKeyValue("tether.queue", queue)
        .contextualName("enqueue " + queue);
    return observation.observe(() -> {
      String id = enqueue.apply(Map.copyOf(context.getCarrier()));
      observation.highCardinalityKeyValue("tether.message.id", id);
      return id;
    });
  }

  /**
   * Returns a listener that observes each message a {@link MainLoop} on {@code queue} handles; it
   * may be shared by loops.
   *
   * @param queue the loop's queue
   * @return the listener
   */
  public MainLoop.Listener loopListener(String queue) {
    return new ProcessListener(Objects.requireNonNull(queue, "queue"));
  }

  /** The enqueue's context: the carrier is the headers to store with the message. */
  public static final class EnqueueContext extends SenderContext<Map<String, String>> {
    private final String queue;

    EnqueueContext(String queue) {
      super((carrier, key, value) -> carrier.put(key, value), Kind.PRODUCER);
      this.queue = queue;
      setCarrier(new LinkedHashMap<>());
      setRemoteServiceName(queue);
    }

    /**
     * Returns the queue sent to.
     *
     * @return the queue
     */
    public String queue() {
      return queue;
    }
  }

  /** The processing's context: the carrier is the delivered message, read by its headers. */
  public static final class ProcessContext extends ReceiverContext<Message<?, ?>> {
    private final String queue;

    ProcessContext(String queue, Message<?, ?> message) {
      super((carrier, key) -> carrier.headers().get(key), Kind.CONSUMER);
      this.queue = queue;
      setCarrier(message);
      setRemoteServiceName(queue);
    }

    /**
     * Returns the queue received from.
     *
     * @return the queue
     */
    public String queue() {
      return queue;
    }

    /**
     * Returns the message being processed.
     *
     * @return the message
     */
    public Message<?, ?> message() {
      return getCarrier();
    }
  }

  private final class ProcessListener implements MainLoop.Listener {
    private final String queue;
    private final Map<Message<?, ?>, Observation.Scope> open = new ConcurrentHashMap<>();

    ProcessListener(String queue) {
      this.queue = queue;
    }

    @Override
    public void received(Message<?, ?> message) {
      ProcessContext context = new ProcessContext(queue, message);
      Observation observation = Observation.createNotStarted(PROCESS, () -> context, registry)
          .contextualName("process " + queue)
          .lowCardinalityKeyValue("tether.queue", queue)
          .highCardinalityKeyValues(KeyValues.of(
              "tether.message.id", message.id(),
              "tether.delivery", Integer.toString(message.deliveryCount())))
          .start();
      open.put(message, observation.openScope());
    }

    private void outcome(Message<?, ?> message, String outcome) {
      Observation.Scope scope = open.get(message);
      if (scope != null) {
        scope.getCurrentObservation().lowCardinalityKeyValue("tether.outcome", outcome);
      }
    }

    @Override
    public void completed(Message<?, ?> message, java.time.Duration took) {
      outcome(message, "success");
    }

    @Override
    public void failed(Message<?, ?> message, Exception error, DeadLetterPolicy.Decision decision,
        java.time.Duration took) {
      outcome(message, decision.isDeadLetter() ? "dead_letter" : "failure");
      Observation.Scope scope = open.get(message);
      if (scope != null) {
        scope.getCurrentObservation().error(error);
      }
    }

    @Override
    public void leaseLost(Message<?, ?> message) {
      outcome(message, "lease_lost");
    }

    @Override
    public void cancelled(Message<?, ?> message) {
      outcome(message, "cancelled");
    }

    @Override
    public void handedBack(Message<?, ?> message) {
      outcome(message, "handed_back");
    }

    @Override
    public void finished(Message<?, ?> message) {
      Observation.Scope scope = open.remove(message);
      if (scope != null) {
        Observation observation = scope.getCurrentObservation();
        if (observation.getContext().getLowCardinalityKeyValue("tether.outcome") == null) {
          // no outcome was recorded (its acknowledgement or hand-back could not be written): a
          // value all the same, so that every observation has the same keys (a Prometheus timer
          // made from them refuses differing tag keys)
          observation.lowCardinalityKeyValue("tether.outcome", UNKNOWN_OUTCOME);
        }
        scope.close();
        observation.stop();
      }
    }
  }
}
