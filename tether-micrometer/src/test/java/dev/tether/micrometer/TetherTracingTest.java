package dev.tether.micrometer;

import static io.micrometer.observation.tck.TestObservationRegistryAssert.assertThat;
import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.PostgresTestSchema;
import dev.tether.jdbc.TetherStore;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.loop.WorkContext;
import dev.tether.micrometer.testing.OneHeaderPropagator;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingReceiverTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingSenderTracingObservationHandler;
import io.micrometer.tracing.propagation.Propagator;
import io.micrometer.tracing.test.simple.SimpleSpan;
import io.micrometer.tracing.test.simple.SimpleTracer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The enqueue's trace context travels with the item through the store: one "process" (a store
 * instance, a tracer, an observation registry) enqueues, another one processes, and the
 * processing's span is a child of the enqueue's span.
 */
class TetherTracingTest {
  @TempDir Path dir;

  /** One process's tracing: a simple tracer behind a test observation registry. */
  private static final class Process {
    final SimpleTracer tracer = new SimpleTracer();
    final TestObservationRegistry registry = TestObservationRegistry.create();

    Process() {
      Propagator propagator = new OneHeaderPropagator(tracer);
      registry.observationConfig().observationHandler(
          new ObservationHandler.FirstMatchingCompositeObservationHandler(
              new PropagatingSenderTracingObservationHandler<>(tracer, propagator),
              new PropagatingReceiverTracingObservationHandler<>(tracer, propagator),
              new DefaultTracingObservationHandler(tracer)));
    }

    SimpleSpan span(String name) {
      return tracer.getSpans().stream().filter(s -> s.getName().equals(name)).findFirst()
          .orElseThrow(() -> new AssertionError("no span " + name + " in " + tracer.getSpans()));
    }
  }

  @Test
  void processingIsAChildOfTheEnqueueAcrossStoresOnSqlite() {
    String url = dir.resolve("t.db").toString();
    try (TetherStore producerStore = TetherStore.open(url);
        TetherStore workerStore = TetherStore.open(url)) {
      enqueueInOneProcessAndProcessInAnother(producerStore, workerStore);
    }
  }

  @Test
  void processingIsAChildOfTheEnqueueAcrossStoresOnPostgres() {
    try (PostgresTestSchema schema = new PostgresTestSchema("tether_mm_");
        TetherStore producerStore = TetherStore.open(schema.url());
        TetherStore workerStore = TetherStore.open(schema.url())) {
      enqueueInOneProcessAndProcessInAnother(producerStore, workerStore);
    }
  }

  private void enqueueInOneProcessAndProcessInAnother(TetherStore producerStore,
      TetherStore workerStore) {
    Process producer = new Process();
    Process worker = new Process();

    // the caller's own observation (an HTTP request, say) is the enqueue's parent
    Observation request = Observation.start("http.request", producer.registry);
    String id;
    try (Observation.Scope ignored = request.openScope()) {
      id = new TetherTracing(producer.registry).send(JdbcMailbox.ofStrings(producerStore, "jobs"), "hello");
    } finally {
      request.stop();
    }

    AtomicReference<Observation> currentInHandler = new AtomicReference<>();
    JdbcMailbox<String, String> workerMailbox = JdbcMailbox.ofStrings(workerStore, "jobs");
    MainLoop<String, String> loop = MainLoop.builder("jobs-1", workerMailbox,
            (String body, WorkContext ctx) -> {
              currentInHandler.set(worker.registry.getCurrentObservation());
              return body.toUpperCase();
            })
        .config(MainLoopConfig.builder().waitTime(Duration.ZERO).build())
        .listener(MainLoop.Listener.all(TetherMetrics.builder().build().loopListener("jobs"),
            new TetherTracing(worker.registry).loopListener("jobs")))
        .build();
    loop.run(1);

    SimpleSpan enqueue = producer.span("enqueue jobs");
    SimpleSpan process = worker.span("process jobs");
    assertThat(enqueue.getParentId()).isEqualTo(producer.span("http.request").getSpanId());
    assertThat(process.getTraceId()).isEqualTo(enqueue.getTraceId());
    assertThat(process.getParentId()).isEqualTo(enqueue.getSpanId());
    assertThat(process.getTags()).containsEntry("tether.message.id", id)
        .containsEntry("tether.outcome", "success");

    assertThat(worker.registry).hasObservationWithNameEqualTo(TetherTracing.PROCESS).that()
        .hasBeenStarted().hasBeenStopped()
        .hasLowCardinalityKeyValue("tether.queue", "jobs")
        .hasLowCardinalityKeyValue("tether.outcome", "success");
    assertThat(producer.registry).hasObservationWithNameEqualTo(TetherTracing.ENQUEUE).that()
        .hasBeenStarted().hasBeenStopped()
        .hasHighCardinalityKeyValue("tether.message.id", id);
    // the processing is the current observation while the handler runs
    assertThat(currentInHandler.get()).isNotNull();
    assertThat(currentInHandler.get().getContext().getName()).isEqualTo(TetherTracing.PROCESS);
  }

  @Test
  void anEnqueueOfTheCallersOwnCarriesTheTraceToo() {
    try (TetherStore store = TetherStore.open(dir.resolve("own.db").toString())) {
      Process producer = new Process();
      String id = new TetherTracing(producer.registry).send("jobs", headers -> Long.toString(
          new dev.tether.jdbc.LeaseManager(store, "producer").enqueue(
              dev.tether.jdbc.NewWorkItem.builder("jobs").input("x").headers(headers).build())));
      var message = JdbcMailbox.ofStrings(store, "jobs").receive(1, Duration.ofMinutes(1), Duration.ZERO).get(0);
      assertThat(message.id()).isEqualTo(id);
      SimpleSpan enqueue = producer.span("enqueue jobs");
      assertThat(message.headers())
          .containsEntry(OneHeaderPropagator.FIELD, enqueue.getTraceId() + "-" + enqueue.getSpanId());
    }
  }

  @Test
  void withoutATracerNothingIsStoredAndProcessingStillObserved() {
    try (TetherStore store = TetherStore.open(dir.resolve("n.db").toString())) {
      TestObservationRegistry registry = TestObservationRegistry.create();
      JdbcMailbox<String, String> mailbox = JdbcMailbox.ofStrings(store, "jobs");
      new TetherTracing(registry).send(mailbox, "x");
      var message = mailbox.receive(1, Duration.ofMinutes(1), Duration.ZERO).get(0);
      assertThat(message.headers()).isEmpty();
      MainLoop.Listener listener = new TetherTracing(registry).loopListener("jobs");
      listener.received(message);
      listener.failed(message, new IllegalStateException("boom"),
          dev.tether.mailbox.DeadLetterPolicy.Decision.retry(Duration.ZERO), Duration.ZERO);
      listener.finished(message);
      assertThat(registry).hasObservationWithNameEqualTo(TetherTracing.PROCESS).that()
          .hasBeenStopped().hasError().hasLowCardinalityKeyValue("tether.outcome", "failure");
    }
  }

  @Test
  void aProcessingWhoseOutcomeCouldNotBeRecordedStillHasAnOutcome() {
    try (TetherStore store = TetherStore.open(dir.resolve("u.db").toString())) {
      TestObservationRegistry registry = TestObservationRegistry.create();
      JdbcMailbox<String, String> mailbox = JdbcMailbox.ofStrings(store, "jobs");
      mailbox.send("x");
      var message = mailbox.receive(1, Duration.ofMinutes(1), Duration.ZERO).get(0);
      MainLoop.Listener listener = new TetherTracing(registry).loopListener("jobs");
      listener.received(message);
      listener.finished(message); // the acknowledgement failed: no outcome callback came
      assertThat(registry).hasObservationWithNameEqualTo(TetherTracing.PROCESS).that()
          .hasBeenStopped().hasLowCardinalityKeyValue("tether.outcome", TetherTracing.UNKNOWN_OUTCOME);
    }
  }
}
