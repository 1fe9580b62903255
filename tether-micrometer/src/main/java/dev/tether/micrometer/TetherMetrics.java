package dev.tether.micrometer;

import dev.tether.LeaseExtender;
import dev.tether.loop.MainLoop;
import dev.tether.loop.WorkLoop;
import dev.tether.mailbox.DeadLetterPolicy;
import dev.tether.mailbox.Message;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Micrometer meters for this process's loops and leases: what its handlers did, counted as they
 * do it. Each counter counts this process's events since it started and never goes down; the
 * store-wide figures (queue depth by status) are gauges of {@link TetherStoreMetrics}, exported
 * only where asked for, so that a fleet of workers does not export the same store-wide series
 * once per worker.
 *
 * <pre>{@code
 * TetherMetrics metrics = TetherMetrics.builder().queues("emails").build();
 * metrics.bindTo(registry);                       // or let Spring Boot bind the MeterBinder bean
 * MainLoop<Req, Res> loop = MainLoop.builder("emails-1", mailbox, handler)
 *     .listener(metrics.loopListener("emails"))
 *     .extenderListener(metrics.extenderListener("emails"))
 *     .build();
 * metrics.watch(loop);                            // tether.loop.heartbeat.age{loop="emails-1"}
 * }</pre>
 *
 * <h2>Meters</h2>
 *
 * Tagged {@code queue} and {@code type} (the message's {@linkplain Message#workType() work type},
 * {@value #NONE} when it has none): {@value #HANDLER_DURATION} (a timer, also tagged {@code
 * outcome} = {@code success} | {@code failure}; percentiles and histogram off unless configured),
 * {@value #EXTENSIONS}, {@value #EXTENSION_FAILURES}, {@value #LEASES_LOST}, {@value
 * #REDELIVERIES}, {@value #DEAD_LETTERS}, {@value #CANCELLATIONS}, {@value #CHECKPOINTS}, {@value
 * #HANDED_BACK}. Tagged {@code queue}: {@value #IN_FLIGHT} (a gauge). Tagged {@code loop}: {@value
 * #HEARTBEAT_AGE} (a time gauge). {@code docs/METRICS.md} lists them with their Prometheus names.
 *
 * <h2>Bounded cardinality</h2>
 *
 * Tag values never come from unbounded data. {@code queue}: the names given to {@link
 * #loopListener}/{@link #extenderListener} (code, not data); with {@link Builder#queues} set, any
 * other name is tagged {@value #OTHER}. {@code type}: with {@link Builder#workTypes} set, only those
 * values, else the first {@link Builder#maxTagValues} distinct work types seen; any other is
 * {@value #OTHER}. {@code loop}: loop names, likewise capped.
 *
 * <h2>Binding</h2>
 *
 * Listeners and meters may be created before {@link #bindTo} (when a framework binds later):
 * events before the first binding are not counted. Binding to several registries records into
 * each. Listeners run on the loops' threads, cost one map lookup and a counter increment, and
 * never throw. Thread-safe.
 */
public final class TetherMetrics implements MeterBinder {
  /** Tag value for a queue, work type or loop beyond the configured or capped set. */
  public static final String OTHER = "other";

  /** Tag value for a message without a work type. */
  public static final String NONE = "none";

  /** Default cap on the distinct values of a tag taken from what is seen. */
  public static final int DEFAULT_MAX_TAG_VALUES = 20;

  /** Handler duration (timer), tags queue, type, outcome. */
  public static final String HANDLER_DURATION = "tether.handler.duration";
  /** Messages being handled now (gauge), tag queue. */
  public static final String IN_FLIGHT = "tether.items.in.flight";
  /** Lease extensions after beats (counter). */
  public static final String EXTENSIONS = "tether.lease.extensions";
  /** Lease extensions that failed for a reason other than a lost lease (counter). */
  public static final String EXTENSION_FAILURES = "tether.lease.extension.failures";
  /** Deliveries whose lease was lost while handled; their outcome was discarded (counter). */
  public static final String LEASES_LOST = "tether.leases.lost";
  /** Messages received again after an earlier delivery (delivery count above 1) (counter). */
  public static final String REDELIVERIES = "tether.redeliveries";
  /** Messages dead-lettered by this process's loops (counter). */
  public static final String DEAD_LETTERS = "tether.dead.letters";
  /** Deliveries stopped because their message was cancelled (counter). */
  public static final String CANCELLATIONS = "tether.cancellations";
  /** Progress checkpoints written by handlers through their context (counter). */
  public static final String CHECKPOINTS = "tether.checkpoints";
  /** Messages handed back uncharged: on shutdown or drain, or stopped by a store outage (counter). */
  public static final String HANDED_BACK = "tether.handed.back";
  /** Time since a loop last beat (time gauge), tag loop. */
  public static final String HEARTBEAT_AGE = "tether.loop.heartbeat.age";

  private final CompositeMeterRegistry registry = new CompositeMeterRegistry();
  private final TagValues queues;
  private final TagValues workTypes;
  private final TagValues loops;
  private final double[] percentiles;
  private final boolean histogram;
  private final ConcurrentHashMap<String, QueueMeters> byQueue = new ConcurrentHashMap<>();
  /** By loop tag: the loop watched last under it, which its gauge reads. */
  private final Map<String, java.util.concurrent.atomic.AtomicReference<WorkLoop>> watched =
      new ConcurrentHashMap<>();

  private TetherMetrics(Builder b) {
    this.queues = b.queues == null ? TagValues.firstSeen(b.maxTagValues) : TagValues.fixed(b.queues);
    this.workTypes =
        b.workTypes == null ? TagValues.firstSeen(b.maxTagValues) : TagValues.fixed(b.workTypes);
    this.loops = TagValues.firstSeen(Math.max(b.maxTagValues, 64));
    this.percentiles = b.percentiles.clone();
    this.histogram = b.histogram;
  }

  /**
   * Returns a builder.
   *
   * @return a new builder with the defaults (any queue name, the first {@value
   *     #DEFAULT_MAX_TAG_VALUES} work types, no percentiles, no histogram)
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Records into {@code registry} too, from now on.
   *
   * @param registry the registry
   */
  @Override
  public void bindTo(MeterRegistry registry) {
    Objects.requireNonNull(registry, "registry");
    this.registry.add(registry);
  }

  /**
   * Returns a listener for a {@link MainLoop} receiving from {@code queue}; loops on the same queue
   * may share it or take one each (they count into the same meters).
   *
   * @param queue the loop's queue (the {@code queue} tag)
   * @return the listener
   */
  public MainLoop.Listener loopListener(String queue) {
    return new LoopListener(queueMeters(queue));
  }

  /**
   * Returns a listener for the {@link LeaseExtender} of a loop receiving from {@code queue} (see
   * {@link MainLoop.Builder#extenderListener}).
   *
   * @param queue the loop's queue (the {@code queue} tag)
   * @return the listener
   */
  public LeaseExtender.Listener extenderListener(String queue) {
    return new ExtenderListener(queueMeters(queue));
  }

  /**
   * Exports the heartbeat age of {@code loop} as {@value #HEARTBEAT_AGE}{@code {loop=name}}: the
   * time since it last beat (a loop beats after every receive and every message, so an idle loop
   * stays young and a stuck one ages). A loop watched under the name of one watched before (the
   * loops of a group started again) replaces it: the gauge reads the latest.
   *
   * @param loop the loop
   * @return this
   */
  public TetherMetrics watch(WorkLoop loop) {
    Objects.requireNonNull(loop, "loop");
    String tag = loops.of(loop.name());
    java.util.concurrent.atomic.AtomicReference<WorkLoop> current = watched.computeIfAbsent(tag, t -> {
      java.util.concurrent.atomic.AtomicReference<WorkLoop> ref = new java.util.concurrent.atomic.AtomicReference<>(loop);
      TimeGauge.builder(HEARTBEAT_AGE, ref, TimeUnit.NANOSECONDS,
              r -> (double) r.get().heartbeat().elapsedNanos())
          .description("Time since the loop last beat")
          .tag("loop", t)
          .strongReference(true)
          .register(registry);
      return ref;
    });
    current.set(loop);
    return this;
  }

  /**
   * Exports the heartbeat age of each loop; see {@link #watch(WorkLoop)}.
   *
   * @param loops the loops, for example a {@code LoopGroup}'s
   * @return this
   */
  public TetherMetrics watchAll(Collection<? extends WorkLoop> loops) {
    loops.forEach(this::watch);
    return this;
  }

  private QueueMeters queueMeters(String queue) {
    Objects.requireNonNull(queue, "queue");
    return byQueue.computeIfAbsent(queues.of(queue), QueueMeters::new);
  }

  @Override
  public String toString() {
    return "TetherMetrics[queues=" + byQueue.keySet() + ", percentiles="
        + Arrays.toString(percentiles) + ", histogram=" + histogram + "]";
  }

  /** The meters of one queue tag value: the in-flight gauge and the meters per work type. */
  private final class QueueMeters {
    final String queue;
    final AtomicInteger inFlight = new AtomicInteger();
    final ConcurrentHashMap<String, TypeMeters> byType = new ConcurrentHashMap<>();

    QueueMeters(String queue) {
      this.queue = queue;
      Gauge.builder(IN_FLIGHT, inFlight, AtomicInteger::get)
          .description("Messages being handled now by this process")
          .tag("queue", queue)
          .strongReference(true)
          .register(registry);
    }

    TypeMeters of(Message<?, ?> message) {
      String type = workTypes.of(message.workType().orElse(null));
      TypeMeters m = byType.get(type);
      return m != null ? m : byType.computeIfAbsent(type, t -> new TypeMeters(queue, t));
    }
  }

  /** The meters of one (queue, work type). */
  private final class TypeMeters {
    final Timer succeeded;
    final Timer failed;
    final Counter extensions;
    final Counter extensionFailures;
    final Counter leasesLost;
    final Counter redeliveries;
    final Counter deadLetters;
    final Counter cancellations;
    final Counter checkpoints;
    final Counter handedBack;

    TypeMeters(String queue, String type) {
      Tags tags = Tags.of("queue", queue, "type", type);
      succeeded = timer(tags.and("outcome", "success"));
      failed = timer(tags.and("outcome", "failure"));
      extensions = counter(EXTENSIONS, "Lease extensions after beats", tags);
      extensionFailures = counter(EXTENSION_FAILURES,
          "Lease extensions that failed for a reason other than a lost lease", tags);
      leasesLost = counter(LEASES_LOST,
          "Deliveries whose lease was lost while handled (outcome discarded)", tags);
      redeliveries = counter(REDELIVERIES,
          "Messages received again after an earlier delivery", tags);
      deadLetters = counter(DEAD_LETTERS, "Messages dead-lettered by this process", tags);
      cancellations = counter(CANCELLATIONS,
          "Deliveries stopped because their message was cancelled", tags);
      checkpoints = counter(CHECKPOINTS, "Progress checkpoints written by handlers", tags);
      handedBack = counter(HANDED_BACK, "Messages handed back uncharged on shutdown", tags);
    }

    private Timer timer(Tags tags) {
      Timer.Builder b = Timer.builder(HANDLER_DURATION)
          .description("Handler durations, by outcome")
          .tags(tags);
      if (histogram) {
        b.publishPercentileHistogram();
      }
      if (percentiles.length > 0) {
        b.publishPercentiles(percentiles);
      }
      return b.register(registry);
    }

    private Counter counter(String name, String description, Tags tags) {
      return Counter.builder(name).description(description).tags(tags).register(registry);
    }
  }

  private static final class LoopListener implements MainLoop.Listener {
    private final QueueMeters meters;

    LoopListener(QueueMeters meters) {
      this.meters = meters;
    }

    @Override
    public void received(Message<?, ?> message) {
      meters.inFlight.incrementAndGet();
      if (message.deliveryCount() > 1) {
        meters.of(message).redeliveries.increment();
      }
    }

    @Override
    public void finished(Message<?, ?> message) {
      meters.inFlight.decrementAndGet();
    }

    @Override
    public void completed(Message<?, ?> message, Duration took) {
      meters.of(message).succeeded.record(took);
    }

    @Override
    public void failed(Message<?, ?> message, Exception error, DeadLetterPolicy.Decision decision,
        Duration took) {
      meters.of(message).failed.record(took);
    }

    @Override
    public void deadLettered(Message<?, ?> message) {
      meters.of(message).deadLetters.increment();
    }

    @Override
    public void leaseLost(Message<?, ?> message) {
      meters.of(message).leasesLost.increment();
    }

    @Override
    public void cancelled(Message<?, ?> message) {
      meters.of(message).cancellations.increment();
    }

    @Override
    public void handedBack(Message<?, ?> message) {
      meters.of(message).handedBack.increment();
    }

    @Override
    public void checkpointed(Message<?, ?> message, int bytes) {
      meters.of(message).checkpoints.increment();
    }
  }

  private static final class ExtenderListener implements LeaseExtender.Listener {
    private final QueueMeters meters;

    ExtenderListener(QueueMeters meters) {
      this.meters = meters;
    }

    @Override
    public void extended(Message<?, ?> message, Duration extension) {
      meters.of(message).extensions.increment();
    }

    @Override
    public void extensionFailed(Message<?, ?> message, RuntimeException error) {
      meters.of(message).extensionFailures.increment();
    }
  }

  /** Builds {@link TetherMetrics}. Not thread-safe. */
  public static final class Builder {
    private Set<String> queues;
    private Set<String> workTypes;
    private int maxTagValues = DEFAULT_MAX_TAG_VALUES;
    private double[] percentiles = new double[0];
    private boolean histogram;

    private Builder() {}

    /**
     * Limits the {@code queue} tag to these names; a loop on another queue is tagged {@value
     * #OTHER}.
     *
     * @param names the queue names
     * @return this builder
     * @throws IllegalArgumentException if a name is blank
     */
    public Builder queues(String... names) {
      this.queues = names(List.of(names), "queue");
      return this;
    }

    /**
     * Limits the {@code type} tag to these work types; any other is tagged {@value #OTHER}.
     *
     * @param types the work types
     * @return this builder
     * @throws IllegalArgumentException if a type is blank
     */
    public Builder workTypes(String... types) {
      this.workTypes = names(List.of(types), "work type");
      return this;
    }

    /**
     * Caps the distinct values a tag takes from what is seen (when no fixed set is configured);
     * default {@value #DEFAULT_MAX_TAG_VALUES}.
     *
     * @param max 1 to 1000
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder maxTagValues(int max) {
      if (max < 1 || max > 1000) {
        throw new IllegalArgumentException("maxTagValues must be in 1..1000, was " + max);
      }
      this.maxTagValues = max;
      return this;
    }

    /**
     * Publishes these client-side percentiles of the handler duration (none by default: they
     * cannot be aggregated across workers; prefer {@link #handlerHistogram}).
     *
     * @param percentiles each in [0, 1]
     * @return this builder
     * @throws IllegalArgumentException if a value is outside [0, 1]
     */
    public Builder handlerPercentiles(double... percentiles) {
      for (double p : percentiles) {
        if (!(p >= 0 && p <= 1)) {
          throw new IllegalArgumentException("a percentile must be in [0, 1], was " + p);
        }
      }
      this.percentiles = percentiles.clone();
      return this;
    }

    /**
     * Publishes a histogram of the handler duration (off by default: it adds a series per
     * bucket, queue, type and outcome).
     *
     * @param enabled whether to publish it
     * @return this builder
     */
    public Builder handlerHistogram(boolean enabled) {
      this.histogram = enabled;
      return this;
    }

    /**
     * Builds the meters' owner.
     *
     * @return the metrics
     */
    public TetherMetrics build() {
      return new TetherMetrics(this);
    }

    private static Set<String> names(List<String> names, String what) {
      for (String n : names) {
        if (n == null || n.isBlank()) {
          throw new IllegalArgumentException(what + " names must not be blank, were " + names);
        }
      }
      return Set.copyOf(names);
    }
  }
}
