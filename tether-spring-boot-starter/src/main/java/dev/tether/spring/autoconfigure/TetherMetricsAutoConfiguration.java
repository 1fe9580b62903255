package dev.tether.spring.autoconfigure;

import dev.tether.Ticker;
import dev.tether.jdbc.TetherStore;
import dev.tether.loop.MainLoop;
import dev.tether.micrometer.RecoverySweepMetrics;
import dev.tether.micrometer.TetherMetrics;
import dev.tether.micrometer.TetherStoreMetrics;
import dev.tether.micrometer.TetherTracing;
import dev.tether.spring.TetherLoopCustomizer;
import dev.tether.spring.TetherSendObserver;
import dev.tether.spring.TetherWorkers;
import dev.tether.spring.autoconfigure.TetherAutoConfiguration.TetherHandlers;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.observation.ObservationRegistry;
import java.util.Set;
import java.util.stream.Collectors;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Micrometer for Tether, when Micrometer and {@code tether-micrometer} are on the classpath: the
 * loops' and leases' meters ({@link TetherMetrics}, bound to the application's registry as a
 * {@link MeterBinder}), the recovery sweep's, the store-wide queue depth when {@code
 * tether.metrics.queue-depth} is on, and, with an {@link ObservationRegistry}, a trace from
 * each send to its processing ({@link TetherTracing}). Kept apart from the rest of the
 * auto-configuration so that an application without Micrometer loads none of it.
 */
@AutoConfiguration(
    after = TetherAutoConfiguration.class,
    afterName = {
      "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
      "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
      "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration"
    })
@ConditionalOnClass({MeterRegistry.class, TetherMetrics.class})
@ConditionalOnBean(TetherStore.class)
public class TetherMetricsAutoConfiguration {

  /** Creates the auto-configuration. */
  public TetherMetricsAutoConfiguration() {}

  /**
   * The meters of this process's loops and leases, tagged by queue (the handler beans' queues)
   * and work type (the first {@value TetherMetrics#DEFAULT_MAX_TAG_VALUES} seen).
   *
   * @param handlers the handlers
   * @param properties the settings
   * @return the meters
   */
  @Bean
  @ConditionalOnMissingBean
  public TetherMetrics tetherMetrics(TetherHandlers handlers, TetherProperties properties) {
    TetherMetrics.Builder b = TetherMetrics.builder().handlerHistogram(properties.getMetrics().isHandlerHistogram());
    Set<String> queues = handlers.specs().stream().map(TetherWorkers.HandlerSpec::queue).collect(Collectors.toSet());
    if (!queues.isEmpty()) {
      b.queues(queues.toArray(String[]::new));
    }
    return b.build();
  }

  /**
   * Attaches the meters (and the tracing, when there is one) to every loop the starter builds.
   *
   * @param metrics the meters
   * @param tracing the tracing, if any
   * @return the customizer
   */
  @Bean
  public TetherLoopCustomizer tetherMetricsLoopCustomizer(TetherMetrics metrics, ObjectProvider<TetherTracing> tracing) {
    return new TetherLoopCustomizer() {
      @Override
      public void customize(String queue, MainLoop.Builder<?, ?> builder) {
        TetherTracing t = tracing.getIfAvailable();
        builder.listener(t == null ? metrics.loopListener(queue)
            : MainLoop.Listener.all(metrics.loopListener(queue), t.loopListener(queue)));
        builder.extenderListener(metrics.extenderListener(queue));
      }

      @Override
      public void built(String queue, MainLoop<?, ?> loop) {
        metrics.watch(loop);
      }
    };
  }

  /**
   * The recovery sweep's meters.
   *
   * @param workers the workers
   * @return the binder (binds nothing when this process does not sweep)
   */
  @Bean
  @ConditionalOnBean(TetherWorkers.class)
  public MeterBinder tetherSweepMetrics(TetherWorkers workers) {
    return workers.sweep().<MeterBinder>map(RecoverySweepMetrics::new).orElse(registry -> {});
  }

  /**
   * The store-wide gauges (items by queue and status), in one process per store.
   *
   * @param store the store
   * @param properties the settings
   * @param handlers the handlers (their queues are tagged; others are "other")
   * @return the gauges
   */
  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnProperty(prefix = "tether.metrics", name = "queue-depth", havingValue = "true")
  public TetherStoreMetrics tetherStoreMetrics(TetherStore store, TetherProperties properties, TetherHandlers handlers) {
    // The handler beans' queues have gauges from the start, even before their first item.
    Set<String> queues = handlers.specs().stream().map(TetherWorkers.HandlerSpec::queue).collect(Collectors.toSet());
    return new TetherStoreMetrics(store, properties.getMetrics().getQueueDepthRefresh(), queues, Ticker.system());
  }

  /** Tracing from send to processing, when the application has an observation registry. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(ObservationRegistry.class)
  @ConditionalOnBean(ObservationRegistry.class)
  static class Tracing {
    /**
     * The tracing.
     *
     * @param registry the application's observation registry
     * @return the tracing
     */
    @Bean
    @ConditionalOnMissingBean
    TetherTracing tetherTracing(ObservationRegistry registry) {
      return new TetherTracing(registry);
    }

    /**
     * Runs each send of {@code TetherQueues} as the enqueue observation, storing its trace
     * context with the message.
     *
     * @param tracing the tracing
     * @return the observer
     */
    @Bean
    @ConditionalOnMissingBean
    TetherSendObserver tetherTracingSendObserver(TetherTracing tracing) {
      return tracing::send;
    }
  }
}
