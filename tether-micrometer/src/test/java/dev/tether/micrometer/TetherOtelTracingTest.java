package dev.tether.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.PostgresTestSchema;
import dev.tether.jdbc.TetherStore;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.loop.WorkContext;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingReceiverTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingSenderTracingObservationHandler;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelPropagator;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The trace link of {@link TetherTracingTest} through Micrometer's OpenTelemetry bridge: the
 * enqueue stores a W3C {@code traceparent} header with the item, and the processing's span,
 * exported by another "process" (its own OpenTelemetry SDK, tracer and registry), is its child.
 */
class TetherOtelTracingTest {
  @TempDir Path dir;

  /** One process's tracing: an OpenTelemetry SDK whose finished spans are kept in a list. */
  private static final class Process implements AutoCloseable {
    final List<SpanData> finished = new CopyOnWriteArrayList<>();
    final SdkTracerProvider provider = SdkTracerProvider.builder()
        .addSpanProcessor(SimpleSpanProcessor.create(new SpanExporter() {
          @Override
          public CompletableResultCode export(Collection<SpanData> spans) {
            finished.addAll(spans);
            return CompletableResultCode.ofSuccess();
          }

          @Override
          public CompletableResultCode flush() {
            return CompletableResultCode.ofSuccess();
          }

          @Override
          public CompletableResultCode shutdown() {
            return CompletableResultCode.ofSuccess();
          }
        }))
        .build();
    final ObservationRegistry registry = ObservationRegistry.create();

    Process() {
      io.opentelemetry.api.trace.Tracer otel = provider.get("tether-test");
      OtelTracer tracer = new OtelTracer(otel, new OtelCurrentTraceContext(), event -> { });
      OtelPropagator propagator = new OtelPropagator(
          ContextPropagators.create(W3CTraceContextPropagator.getInstance()), otel);
      registry.observationConfig().observationHandler(
          new ObservationHandler.FirstMatchingCompositeObservationHandler(
              new PropagatingSenderTracingObservationHandler<>(tracer, propagator),
              new PropagatingReceiverTracingObservationHandler<>(tracer, propagator),
              new DefaultTracingObservationHandler(tracer)));
    }

    SpanData span(String name) {
      return finished.stream().filter(s -> s.getName().equals(name)).findFirst()
          .orElseThrow(() -> new AssertionError("no span " + name + " in " + finished));
    }

    @Override
    public void close() {
      provider.close();
    }
  }

  @Test
  void processingIsAChildOfTheEnqueueOnSqlite() {
    String url = dir.resolve("otel.db").toString();
    try (TetherStore producerStore = TetherStore.open(url);
        TetherStore workerStore = TetherStore.open(url)) {
      enqueueInOneProcessAndProcessInAnother(producerStore, workerStore);
    }
  }

  @Test
  void processingIsAChildOfTheEnqueueOnPostgres() {
    try (PostgresTestSchema schema = new PostgresTestSchema("tether_otel_");
        TetherStore producerStore = TetherStore.open(schema.url());
        TetherStore workerStore = TetherStore.open(schema.url())) {
      enqueueInOneProcessAndProcessInAnother(producerStore, workerStore);
    }
  }

  private static void enqueueInOneProcessAndProcessInAnother(TetherStore producerStore,
      TetherStore workerStore) {
    try (Process producer = new Process(); Process worker = new Process()) {
      Observation request = Observation.start("http.request", producer.registry);
      String id;
      try (Observation.Scope ignored = request.openScope()) {
        id = new TetherTracing(producer.registry)
            .send(JdbcMailbox.ofStrings(producerStore, "jobs"), "hello");
      } finally {
        request.stop();
      }

      JdbcMailbox<String, String> workerMailbox = JdbcMailbox.ofStrings(workerStore, "jobs");
      MainLoop<String, String> loop = MainLoop.builder("jobs-1", workerMailbox,
              (String body, WorkContext ctx) -> body.toUpperCase())
          .config(MainLoopConfig.builder().waitTime(Duration.ZERO).build())
          .listener(new TetherTracing(worker.registry).loopListener("jobs"))
          .build();
      loop.run(1);

      SpanData enqueue = producer.span("enqueue jobs");
      SpanData process = worker.span("process jobs");
      assertThat(enqueue.getParentSpanId()).isEqualTo(producer.span("http.request").getSpanId());
      assertThat(process.getTraceId()).isEqualTo(enqueue.getTraceId());
      assertThat(process.getParentSpanId()).isEqualTo(enqueue.getSpanId());
      assertThat(process.getParentSpanContext().isRemote()).isTrue();
      assertThat(process.getAttributes().asMap().toString()).contains(id);
      // what travels through the store is the W3C header, nothing of the test's own making
      String second = new TetherTracing(producer.registry)
          .send(JdbcMailbox.ofStrings(producerStore, "jobs"), "again");
      var message = workerMailbox.receive(1, Duration.ofMinutes(1), Duration.ZERO).get(0);
      assertThat(message.id()).isEqualTo(second);
      SpanData secondEnqueue = producer.finished.stream()
          .filter(s -> s.getName().equals("enqueue jobs") && !s.getSpanId().equals(enqueue.getSpanId()))
          .findFirst().orElseThrow();
      assertThat(message.headers()).containsEntry("traceparent",
          "00-" + secondEnqueue.getTraceId() + "-" + secondEnqueue.getSpanId() + "-01");
    }
  }
}
