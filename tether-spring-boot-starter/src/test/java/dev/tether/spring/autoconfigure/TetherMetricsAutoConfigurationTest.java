package dev.tether.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkStatus;
import dev.tether.loop.WorkContext;
import dev.tether.micrometer.TetherMetrics;
import dev.tether.micrometer.TetherTracing;
import dev.tether.spring.TetherHandler;
import dev.tether.spring.TetherQueues;
import dev.tether.spring.TetherSendObserver;
import dev.tether.spring.TetherWorkers;
import dev.tether.micrometer.testing.OneHeaderPropagator;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingReceiverTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingSenderTracingObservationHandler;
import io.micrometer.tracing.propagation.Propagator;
import io.micrometer.tracing.test.simple.SimpleSpan;
import io.micrometer.tracing.test.simple.SimpleTracer;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/** Micrometer wired when present, absent otherwise; a trace from a transactional send to its processing. */
class TetherMetricsAutoConfigurationTest {
  @TempDir Path dir;

  static final class Echo implements TetherHandler<String, String> {
    @Override
    public String queue() {
      return "echo";
    }

    @Override
    public String handle(String request, WorkContext context) {
      context.beat();
      return request;
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class App {
    @Bean
    Echo echo() {
      return new Echo();
    }

    @Bean
    SimpleMeterRegistry meterRegistry() {
      return new SimpleMeterRegistry();
    }
  }

  private ApplicationContextRunner runner() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
            DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
            MetricsAutoConfiguration.class, TetherAutoConfiguration.class, TetherMetricsAutoConfiguration.class))
        .withUserConfiguration(App.class)
        .withPropertyValues("spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db"), "tether.worker.wait-time=1s");
  }

  private static void awaitCompleted(TetherStore store, String id) {
    await().atMost(Duration.ofSeconds(30)).until(() -> new QueueMonitor(store).item(Long.parseLong(id))
        .map(i -> i.status() == WorkStatus.COMPLETED).orElse(false));
  }

  @Test
  void withMicrometerTheLoopsLeasesAndSweepAreMetered() {
    runner().run(context -> {
      assertThat(context).hasNotFailed().hasSingleBean(TetherMetrics.class);
      String id = context.getBean(TetherQueues.class).send("echo", "hi");
      awaitCompleted(context.getBean(TetherStore.class), id);
      MeterRegistry registry = context.getBean(MeterRegistry.class);
      await().atMost(Duration.ofSeconds(10)).alias("meters: " + registry.getMeters().stream()
          .map(m -> m.getId().toString()).toList()).until(() -> registry.find(TetherMetrics.HANDLER_DURATION)
          .tag("queue", "echo").tag("outcome", "success").timer() != null
          && registry.find(TetherMetrics.HANDLER_DURATION).tag("queue", "echo").tag("outcome", "success")
              .timer().count() == 1);
      assertThat(registry.find(TetherMetrics.HEARTBEAT_AGE).tag("loop", "echo-1").timeGauge()).isNotNull();
      assertThat(registry.find("tether.sweep.scans").meter()).isNotNull();
      assertThat(registry.find("tether.queue.items").meter()).as("store-wide gauges are opt-in").isNull();
    });
  }

  @Test
  void queueDepthGaugesAreExportedWhereAskedFor() {
    runner().withPropertyValues("tether.metrics.queue-depth=true", "tether.metrics.queue-depth-refresh=1s").run(context -> {
      String id = context.getBean(TetherQueues.class).send("echo", "hi");
      awaitCompleted(context.getBean(TetherStore.class), id);
      MeterRegistry registry = context.getBean(MeterRegistry.class);
      await().atMost(Duration.ofSeconds(30)).until(() ->
          registry.find("tether.queue.items").tag("queue", "echo").tag("status", "completed").gauge() != null
              && registry.find("tether.queue.items").tag("queue", "echo").tag("status", "completed").gauge().value() == 1.0);
    });
  }

  @Test
  void withoutMicrometerNothingOfItIsLoadedAndTheWorkersStillRun() {
    runner().withClassLoader(new FilteredClassLoader(MeterRegistry.class)).run(context -> {
      assertThat(context).hasNotFailed().doesNotHaveBean(TetherMetrics.class).hasSingleBean(TetherWorkers.class);
      String id = context.getBean(TetherQueues.class).send("echo", "still works");
      awaitCompleted(context.getBean(TetherStore.class), id);
    });
    runner().withClassLoader(new FilteredClassLoader("dev.tether.micrometer")).run(context ->
        assertThat(context).hasNotFailed().doesNotHaveBean(TetherMetricsAutoConfiguration.class)
            .doesNotHaveBean(TetherSendObserver.class));
  }

  /** One process's tracer behind an observation registry, propagating {@code traceId-spanId}. */
  @Configuration(proxyBeanMethods = false)
  static class Tracing {
    final SimpleTracer tracer = new SimpleTracer();

    @Bean
    SimpleTracer tracer() {
      return tracer;
    }

    @Bean
    ObservationRegistry observationRegistry() {
      ObservationRegistry registry = ObservationRegistry.create();
      Propagator propagator = new OneHeaderPropagator(tracer);
      registry.observationConfig().observationHandler(new ObservationHandler.FirstMatchingCompositeObservationHandler(
          new PropagatingSenderTracingObservationHandler<>(tracer, propagator),
          new PropagatingReceiverTracingObservationHandler<>(tracer, propagator),
          new DefaultTracingObservationHandler(tracer)));
      return registry;
    }
  }

  @Test
  void aTransactionalSendIsTheParentOfItsProcessing() {
    runner().withUserConfiguration(Tracing.class).run(context -> {
      assertThat(context).hasNotFailed().hasSingleBean(TetherTracing.class);
      ObservationRegistry registry = context.getBean(ObservationRegistry.class);
      SimpleTracer tracer = context.getBean(SimpleTracer.class);
      TransactionTemplate tx = new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
      Observation request = Observation.start("http.request", registry);
      String id;
      try (Observation.Scope ignored = request.openScope()) {
        id = tx.execute(status -> context.getBean(TetherQueues.class).send("echo", "traced"));
      } finally {
        request.stop();
      }
      awaitCompleted(context.getBean(TetherStore.class), id);
      await().atMost(Duration.ofSeconds(10)).until(() -> span(tracer, "process echo") != null);
      SimpleSpan enqueue = span(tracer, "enqueue echo");
      SimpleSpan process = span(tracer, "process echo");
      assertThat(enqueue.getParentId()).isEqualTo(span(tracer, "http.request").getSpanId());
      assertThat(process.getTraceId()).isEqualTo(enqueue.getTraceId());
      assertThat(process.getParentId()).isEqualTo(enqueue.getSpanId());
      assertThat(process.getTags()).containsEntry("tether.message.id", id);
    });
  }

  private static SimpleSpan span(SimpleTracer tracer, String name) {
    return tracer.getSpans().stream().filter(s -> name.equals(s.getName())).findFirst().orElse(null);
  }
}
