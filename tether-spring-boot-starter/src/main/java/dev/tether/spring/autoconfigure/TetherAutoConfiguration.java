package dev.tether.spring.autoconfigure;

import dev.tether.Codec;
import dev.tether.LeaseExtenderConfig;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import dev.tether.spring.BodyCodecs;
import dev.tether.spring.JsonCodecFactory;
import dev.tether.spring.TetherHandler;
import dev.tether.spring.TetherLoopCustomizer;
import dev.tether.spring.TetherQueues;
import dev.tether.spring.TetherSendObserver;
import dev.tether.spring.TetherWorkers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.core.ResolvableType;
import org.springframework.util.ClassUtils;

/**
 * Auto-configuration of Tether: a {@link TetherStore} on {@code tether.store.url} when it is set
 * (a pool of Tether's own), else on the application's {@code DataSource}, else on the SQLite file
 * {@code tether.db}; a {@link TetherQueues} to send messages, inside the caller's transactions
 * when the store is on the application's {@code DataSource}; and {@link TetherWorkers} running
 * every {@link TetherHandler} bean.
 */
// by name: Boot's DataSource auto-configuration is on the classpath only when the application
// brings it (spring-boot-jdbc is an optional dependency of the starter)
@AutoConfiguration(afterName = "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration")
@ConditionalOnClass(TetherStore.class)
@ConditionalOnProperty(prefix = "tether", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(TetherProperties.class)
public class TetherAutoConfiguration {
  private static final Logger LOG = LoggerFactory.getLogger(TetherAutoConfiguration.class);

  /** Creates the auto-configuration. */
  public TetherAutoConfiguration() {}

  /**
   * The store: on {@code tether.store.url} when set, else on the application's only (or primary)
   * {@code DataSource}, else on the SQLite file {@code tether.store.default-file}.
   *
   * @param properties the settings
   * @param dataSource the application's data source, if any
   * @return the open, migrated (or validated) store
   */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  public TetherStore tetherStore(TetherProperties properties, ObjectProvider<DataSource> dataSource) {
    TetherProperties.Store s = properties.getStore();
    TetherStoreConfig.Builder b = TetherStoreConfig.builder()
        .migration(TetherStoreConfig.SchemaMigration.parse(s.getMigrate()))
        .notifications(s.isNotifications())
        .retainBackendMemory(s.isRetainBackendMemory());
    if (s.getSchema() != null && !s.getSchema().isBlank()) {
      b.schema(s.getSchema().trim());
    }
    if (s.getPoolSize() > 0) {
      b.maximumPoolSize(s.getPoolSize());
    }
    TetherStoreConfig config = b.build();
    if (s.getUrl() != null && !s.getUrl().isBlank()) {
      return TetherStore.open(s.getUrl().trim(), config);
    }
    DataSource ds = dataSource.getIfUnique();
    if (ds != null) {
      return TetherStore.open(ds, config);
    }
    LOG.info("No DataSource and no tether.store.url: Tether keeps its queues in the SQLite file {}",
        s.getDefaultFile());
    return TetherStore.open(s.getDefaultFile(), config);
  }

  /**
   * The handler beans with their settings resolved against {@code tether.handler-defaults.*}.
   *
   * @param properties the settings
   * @param handlers the handler beans
   * @param json how JSON bodies are written: the application's {@link JsonCodecFactory} bean, if any
   * @param beans where the application's Jackson mapper is looked up otherwise
   * @return the resolved handlers
   */
  @Bean
  @ConditionalOnMissingBean
  public TetherHandlers tetherHandlers(TetherProperties properties, ObjectProvider<TetherHandler<?, ?>> handlers,
      ObjectProvider<JsonCodecFactory> json, BeanFactory beans) {
    BodyCodecs codecs = new BodyCodecs(json.getIfAvailable(() -> TetherJson.pick(beans)));
    TetherProperties.HandlerDefaults d = properties.getHandlerDefaults();
    List<TetherWorkers.HandlerSpec> specs = new ArrayList<>();
    Map<String, TetherHandler<?, ?>> byQueue = new HashMap<>();
    handlers.orderedStream().forEach(h -> specs.add(resolve(h, d, properties.getWorker().getWaitTime(), codecs, byQueue)));
    return new TetherHandlers(specs, codecs);
  }

  private static TetherWorkers.HandlerSpec resolve(TetherHandler<?, ?> h, TetherProperties.HandlerDefaults d,
      Duration waitTime, BodyCodecs codecs, Map<String, TetherHandler<?, ?>> byQueue) {
    String queue = h.queue();
    if (queue == null || queue.isBlank()) {
      throw new IllegalStateException("handler bean " + h.getClass().getName() + " names no queue");
    }
    TetherHandler<?, ?> other = byQueue.put(queue, h);
    if (other != null) {
      throw new IllegalStateException("handler beans " + other.getClass().getName() + " and "
          + h.getClass().getName() + " both handle queue '" + queue + "': one handler per queue");
    }
    int concurrency = h.concurrency() > 0 ? h.concurrency() : d.getConcurrency();
    if (concurrency < 1 || concurrency > 64) {
      throw new IllegalStateException("handler for queue '" + queue + "': concurrency must be in 1..64, was "
          + concurrency);
    }
    Duration visibility = h.visibility() != null ? h.visibility() : d.getVisibility();
    LeaseExtenderConfig extender = h.extender() != null ? h.extender()
        : LeaseExtenderConfig.of(d.getExtendEvery(), d.getExtension());
    Duration deadline = h.deadline() != null ? h.deadline() : d.getDeadline();
    int maxAttempts = h.maxAttempts() > 0 ? h.maxAttempts() : d.getMaxAttempts();
    ResolvableType type = ResolvableType.forClass(ClassUtils.getUserClass(h)).as(TetherHandler.class);
    String name = "handler for queue '" + queue + "' (" + h.getClass().getName() + ")";
    Codec<?> requestCodec = h.requestCodec() != null ? h.requestCodec()
        : codecs.forType(type.getGeneric(0), "request type of the " + name);
    Codec<?> resultCodec = h.resultCodec() != null ? h.resultCodec()
        : resultCodec(codecs, type.getGeneric(1), name);
    return new TetherWorkers.HandlerSpec(h, queue, concurrency,
        TetherWorkers.loopConfig(visibility, extender, deadline, waitTime), maxAttempts, requestCodec, resultCodec);
  }

  /** A handler that returns nothing ({@code Void}) has results that are never stored. */
  private static Codec<?> resultCodec(BodyCodecs codecs, ResolvableType type, String name) {
    Class<?> raw = type.resolve();
    if (raw == Void.class) {
      return Codec.utf8(); // never called: a null result is neither replied nor kept
    }
    return codecs.forType(type, "result type of the " + name);
  }

  /**
   * The sender: joins the caller's transaction on the store's data source.
   *
   * @param properties the settings
   * @param store the store
   * @param handlers the handlers (their codecs and budgets)
   * @param dataSource the application's data source, if any
   * @param observer what wraps each send (tracing), if any
   * @return the sender
   */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  public TetherQueues tetherQueues(TetherProperties properties, TetherStore store, TetherHandlers handlers,
      ObjectProvider<DataSource> dataSource, ObjectProvider<TetherSendObserver> observer) {
    DataSource ds = dataSource.getIfUnique();
    DataSource transactional = ds != null && store.dataSource() == ds ? ds : null;
    Map<String, Codec<?>> codecs = new HashMap<>();
    Map<String, Integer> budgets = new HashMap<>();
    for (TetherWorkers.HandlerSpec spec : handlers.specs()) {
      codecs.put(spec.queue(), spec.requestCodec());
      budgets.put(spec.queue(), spec.maxAttempts());
    }
    TetherQueues queues = new TetherQueues(store, transactional, handlers.codecs(), codecs, budgets,
        properties.getHandlerDefaults().getMaxAttempts());
    observer.ifAvailable(queues::observer);
    return queues;
  }

  /**
   * The loops running the handler beans, started and stopped with the context.
   *
   * @param properties the settings
   * @param store the store
   * @param handlers the handlers
   * @param customizers loop customizers (metrics, tracing)
   * @return the workers
   */
  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnProperty(prefix = "tether.worker", name = "enabled", havingValue = "true", matchIfMissing = true)
  public TetherWorkers tetherWorkers(TetherProperties properties, TetherStore store, TetherHandlers handlers,
      ObjectProvider<TetherLoopCustomizer> customizers) {
    TetherProperties.Worker w = properties.getWorker();
    TetherWorkers.Settings settings = new TetherWorkers.Settings(
        w.getShutdownTimeout(),
        w.getDrainTimeout(),
        w.getWatchdog().isEnabled() ? w.getWatchdog().getThreshold() : null,
        w.getWatchdog().getThreshold(),
        w.getWatchdog().getInterval(),
        // without a watchdog the group has no readiness threshold of its own: the same fraction
        // of the (unenforced) threshold
        w.getReadinessThreshold() != null || w.getWatchdog().isEnabled() ? w.getReadinessThreshold()
            : Duration.ofNanos((long) (w.getWatchdog().getThreshold().toNanos()
                * dev.tether.loop.LoopGroup.DEFAULT_READINESS_FRACTION)),
        w.getCalibration(),
        properties.getHealthServer().isEnabled() ? properties.getHealthServer().getPort() : null,
        properties.getSweep().isEnabled(),
        properties.getSweep().getInterval());
    return new TetherWorkers(store, handlers.specs(), settings, customizers.orderedStream().toList());
  }

  /**
   * The application's handler beans with their resolved settings.
   *
   * @param specs the handlers
   * @param codecs the codecs by type
   */
  public record TetherHandlers(List<TetherWorkers.HandlerSpec> specs, BodyCodecs codecs) {
    /**
     * Copies the list.
     *
     * @param specs the handlers
     * @param codecs the codecs by type
     */
    public TetherHandlers {
      specs = List.copyOf(specs);
    }
  }
}
