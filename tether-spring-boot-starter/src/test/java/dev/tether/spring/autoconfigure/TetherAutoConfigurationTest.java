package dev.tether.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import dev.tether.jdbc.WorkStatus;
import dev.tether.loop.WorkContext;
import dev.tether.spring.TetherHandler;
import dev.tether.spring.TetherQueues;
import dev.tether.spring.TetherWorkers;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.support.TransactionTemplate;

/** The auto-configuration with and without a DataSource and the Actuator on the classpath. */
class TetherAutoConfigurationTest {
  @TempDir Path dir;

  /** Greets; records what it saw. */
  static final class Greeter implements TetherHandler<Greeting, String> {
    final List<Greeting> seen = new CopyOnWriteArrayList<>();

    @Override
    public String queue() {
      return "greetings";
    }

    @Override
    public String handle(Greeting request, WorkContext context) {
      seen.add(request);
      context.beat();
      return "hello " + request.name();
    }
  }

  record Greeting(String name, int times) {}

  @Configuration(proxyBeanMethods = false)
  static class GreeterConfig {
    @Bean
    Greeter greeter() {
      return new Greeter();
    }
  }

  private ApplicationContextRunner runner() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(TetherAutoConfiguration.class, TetherHealthAutoConfiguration.class))
        .withPropertyValues("tether.worker.wait-time=1s");
  }

  private ApplicationContextRunner withDataSource() {
    return runner()
        .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
            DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class))
        .withPropertyValues("spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db"));
  }

  @Test
  void withADataSourceTheStoreIsOnItAndSendsJoinTheCallersTransaction() {
    withDataSource().withUserConfiguration(GreeterConfig.class).run(context -> {
      assertThat(context).hasNotFailed();
      TetherStore store = context.getBean(TetherStore.class);
      assertThat(store.dataSource()).isSameAs(context.getBean(DataSource.class));
      assertThat(store.engine()).isEqualTo(TetherStore.Engine.SQLITE);
      TetherQueues queues = context.getBean(TetherQueues.class);
      TransactionTemplate tx = new TransactionTemplate(
          context.getBean(org.springframework.transaction.PlatformTransactionManager.class));
      Greeter greeter = context.getBean(Greeter.class);

      String[] rolledBack = new String[1];
      tx.executeWithoutResult(status -> {
        rolledBack[0] = queues.send("greetings", new Greeting("nobody", 1));
        status.setRollbackOnly();
      });
      assertThat(new QueueMonitor(store).item(Long.parseLong(rolledBack[0]))).isEmpty();

      String committed = tx.execute(status -> queues.send("greetings", new Greeting("ada", 2)));
      long id = Long.parseLong(committed);
      await().atMost(Duration.ofSeconds(30)).until(() ->
          new QueueMonitor(store).item(id).map(i -> i.status() == WorkStatus.COMPLETED).orElse(false));
      assertThat(greeter.seen).containsExactly(new Greeting("ada", 2));
      assertThat(new QueueMonitor(store).item(id).orElseThrow().inputAsString())
          .isEqualTo("{\"name\":\"ada\",\"times\":2}");
    });
  }

  @Test
  void withoutADataSourceTheStoreIsTheDefaultSqliteFileAndSendsStandAlone() {
    Path file = dir.resolve("alone.db");
    runner()
        .withClassLoader(new FilteredClassLoader(DataSourceAutoConfiguration.class))
        .withUserConfiguration(GreeterConfig.class)
        .withPropertyValues("tether.store.default-file=" + file)
        .run(context -> {
          assertThat(context).hasNotFailed().doesNotHaveBean(DataSource.class);
          TetherStore store = context.getBean(TetherStore.class);
          assertThat(store.engine()).isEqualTo(TetherStore.Engine.SQLITE);
          assertThat(Files.exists(file)).isTrue();
          long id = Long.parseLong(context.getBean(TetherQueues.class).send("greetings", new Greeting("bo", 1)));
          await().atMost(Duration.ofSeconds(30)).until(() ->
              new QueueMonitor(store).item(id).map(i -> i.status() == WorkStatus.COMPLETED).orElse(false));
        });
  }

  @Test
  void theStoresSettingsReachItsConfigurationAndDefaultAsTheLibrarysDo() {
    runner()
        .withPropertyValues("tether.store.url=jdbc:sqlite:" + dir.resolve("defaults.db"))
        .run(context -> {
          TetherStoreConfig c = context.getBean(TetherStore.class).config();
          TetherStoreConfig library = TetherStoreConfig.defaults();
          assertThat(c.notifications()).isEqualTo(library.notifications()).isTrue();
          assertThat(c.retainBackendMemory()).isEqualTo(library.retainBackendMemory()).isTrue();
          assertThat(c.maximumPoolSize()).isEqualTo(library.maximumPoolSize());
        });
    runner()
        .withPropertyValues("tether.store.url=jdbc:sqlite:" + dir.resolve("set.db"),
            "tether.store.notifications=false", "tether.store.retain-backend-memory=false",
            "tether.store.pool-size=3")
        .run(context -> {
          TetherStoreConfig c = context.getBean(TetherStore.class).config();
          assertThat(c.notifications()).isFalse();
          assertThat(c.retainBackendMemory()).isFalse();
          assertThat(c.maximumPoolSize()).isEqualTo(3);
        });
  }

  @Test
  void aStoreUrlWinsOverTheApplicationsDataSourceAndThenRefusesToJoinItsTransactions() {
    withDataSource()
        .withPropertyValues("tether.store.url=jdbc:sqlite:" + dir.resolve("own.db"))
        .run(context -> {
          TetherStore store = context.getBean(TetherStore.class);
          assertThat(store.dataSource()).isNotSameAs(context.getBean(DataSource.class));
          TransactionTemplate tx = new TransactionTemplate(
              context.getBean(org.springframework.transaction.PlatformTransactionManager.class));
          org.assertj.core.api.Assertions.assertThatThrownBy(() ->
                  tx.executeWithoutResult(s -> context.getBean(TetherQueues.class).send("other", "text")))
              .isInstanceOf(IllegalStateException.class).hasMessageContaining("tether.store.url");
          assertThat(context.getBean(TetherQueues.class).send("other", "outside")).isNotBlank();
        });
  }

  @Test
  void withTheActuatorTheIndicatorsAreUpAndWithoutItThereAreNone() {
    withDataSource().withUserConfiguration(GreeterConfig.class).run(context -> {
      assertThat(context).hasBean(TetherHealthAutoConfiguration.LIVENESS).hasBean(TetherHealthAutoConfiguration.READINESS);
      HealthIndicator readiness = context.getBean(TetherHealthAutoConfiguration.READINESS, HealthIndicator.class);
      await().atMost(Duration.ofSeconds(30)).until(() -> readiness.health().getStatus().equals(Status.UP));
      HealthIndicator liveness = context.getBean(TetherHealthAutoConfiguration.LIVENESS, HealthIndicator.class);
      assertThat(liveness.health().getStatus()).isEqualTo(Status.UP);
      assertThat(liveness.health().getDetails()).containsKey("greetings-1");
    });
    withDataSource().withPropertyValues("management.health.tether.enabled=false").run(context ->
        assertThat(context).hasNotFailed().hasSingleBean(TetherStore.class)
            .doesNotHaveBean(TetherHealthAutoConfiguration.LIVENESS)
            .doesNotHaveBean(TetherHealthAutoConfiguration.READINESS));
    withDataSource().withClassLoader(new FilteredClassLoader(HealthIndicator.class)).run(context -> {
      assertThat(context).hasNotFailed().hasSingleBean(TetherStore.class)
          .doesNotHaveBean(TetherHealthAutoConfiguration.LIVENESS)
          .doesNotHaveBean(TetherHealthAutoConfiguration.READINESS);
    });
  }

  /** Blocks without beating until released. */
  static final class Stuck implements TetherHandler<String, String> {
    final java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
    final java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);

    @Override
    public String queue() {
      return "stuck";
    }

    @Override
    public String handle(String request, WorkContext context) throws Exception {
      started.countDown();
      release.await(60, java.util.concurrent.TimeUnit.SECONDS);
      return "released";
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class StuckConfig {
    @Bean
    Stuck stuck() {
      return new Stuck();
    }
  }

  @Test
  void withTheWatchdogOffAStalledLoopStillFailsLivenessAndReadiness() {
    withDataSource().withUserConfiguration(StuckConfig.class)
        .withPropertyValues("tether.worker.watchdog.enabled=false",
            "tether.worker.watchdog.threshold=1s", "tether.worker.watchdog.interval=100ms",
            "tether.worker.calibration=off")
        .run(context -> {
          Stuck stuck = context.getBean(Stuck.class);
          HealthIndicator liveness = context.getBean(TetherHealthAutoConfiguration.LIVENESS, HealthIndicator.class);
          HealthIndicator readiness = context.getBean(TetherHealthAutoConfiguration.READINESS, HealthIndicator.class);
          await().atMost(Duration.ofSeconds(30)).until(() -> readiness.health().getStatus().equals(Status.UP));
          context.getBean(TetherQueues.class).send("stuck", "x");
          try {
            assertThat(stuck.started.await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
            await().atMost(Duration.ofSeconds(30)).until(() -> liveness.health().getStatus().equals(Status.DOWN));
            assertThat(liveness.health().getDetails()).containsEntry("stalled", "stuck-1");
            await().atMost(Duration.ofSeconds(30)).until(() -> readiness.health().getStatus().equals(Status.DOWN));
          } finally {
            stuck.release.countDown();
          }
        });
  }

  @Test
  void handlerSettingsComeFromTheBeanElseFromTheDefaults() {
    withDataSource().withUserConfiguration(GreeterConfig.class)
        .withPropertyValues("tether.handler-defaults.concurrency=3", "tether.handler-defaults.visibility=45m",
            "tether.handler-defaults.max-attempts=7")
        .run(context -> {
          TetherWorkers workers = context.getBean(TetherWorkers.class);
          TetherWorkers.HandlerSpec spec = workers.handlers().get(0);
          assertThat(spec.queue()).isEqualTo("greetings");
          assertThat(spec.concurrency()).isEqualTo(3);
          assertThat(spec.maxAttempts()).isEqualTo(7);
          assertThat(spec.loopConfig().visibilityTimeout()).isEqualTo(Duration.ofMinutes(45));
          assertThat(spec.requestCodec().toString()).contains("Greeting");
          await().atMost(Duration.ofSeconds(30)).until(() -> workers.loops().size() == 3);
        });
  }

  @Configuration(proxyBeanMethods = false)
  static class TwoHandlersForOneQueue {
    @Bean
    Greeter first() {
      return new Greeter();
    }

    @Bean
    Greeter second() {
      return new Greeter();
    }
  }

  @Test
  void twoHandlersForOneQueueAreRefusedNamingTheQueue() {
    withDataSource().withUserConfiguration(TwoHandlersForOneQueue.class).run(context ->
        assertThat(context).hasFailed().getFailure().rootCause()
            .hasMessageContaining("both handle queue 'greetings'"));
  }

  @Test
  void validatingAnEmptyDatabaseFailsTheStartNamingTheVersions() {
    withDataSource().withPropertyValues("tether.store.migrate=validate").run(context ->
        assertThat(context).hasFailed().getFailure().rootCause()
            .hasMessageContaining("tables are missing").hasMessageContaining("tether.store.migrate=true"));
  }

  /** Records the order in which beans finished initializing. */
  static final class InitOrder implements org.springframework.beans.factory.config.BeanPostProcessor {
    final List<Object> beans = new CopyOnWriteArrayList<>();

    @Override
    public Object postProcessAfterInitialization(Object bean, String name) {
      beans.add(bean);
      return bean;
    }
  }

  @Test
  void theStoreOpensAfterTheApplicationsDatabaseInitialization() throws IOException {
    Path script = Files.writeString(dir.resolve("app-schema.sql"), "CREATE TABLE app_things (id INTEGER);");
    InitOrder order = new InitOrder();
    withDataSource()
        .withConfiguration(AutoConfigurations.of(
            org.springframework.boot.jdbc.autoconfigure.DataSourceInitializationAutoConfiguration.class))
        .withBean(InitOrder.class, () -> order)
        .withPropertyValues("spring.sql.init.mode=always",
            "spring.sql.init.schema-locations=file:" + script)
        .run(context -> {
          assertThat(context).hasNotFailed();
          int initializer = -1;
          int store = -1;
          for (int i = 0; i < order.beans.size(); i++) {
            Object b = order.beans.get(i);
            if (b instanceof org.springframework.boot.sql.init.AbstractScriptDatabaseInitializer) {
              initializer = i;
            } else if (b instanceof TetherStore) {
              store = i;
            }
          }
          assertThat(initializer).as("the script initializer ran").isNotNegative();
          assertThat(store).as("the store opened after it").isGreaterThan(initializer);
        });
  }

  @Test
  void settingsBuiltTheEarlierWayDrainNothingAndFailLivenessAtTheWatchdogsThreshold() {
    TetherWorkers.Settings s = new TetherWorkers.Settings(Duration.ofSeconds(30), Duration.ofMinutes(12),
        Duration.ofMinutes(1), null, dev.tether.loop.Calibration.Mode.ERROR, null, true, Duration.ofMinutes(1));
    assertThat(s.drainTimeout()).isZero();
    assertThat(s.livenessThreshold()).isEqualTo(Duration.ofMinutes(12));
    assertThat(s.watchdogThreshold()).isEqualTo(Duration.ofMinutes(12));
  }

  @Test
  void tetherCanBeTurnedOff() {
    withDataSource().withPropertyValues("tether.enabled=false").run(context ->
        assertThat(context).doesNotHaveBean(TetherStore.class).doesNotHaveBean(TetherQueues.class));
  }

  @Test
  void aWorkerlessApplicationOnlySends() {
    withDataSource().withUserConfiguration(GreeterConfig.class).withPropertyValues("tether.worker.enabled=false")
        .run(context -> assertThat(context).hasSingleBean(TetherQueues.class).doesNotHaveBean(TetherWorkers.class));
  }

  @Test
  void theMetadataNamesEverySettingForIdes() throws IOException {
    try (InputStream in = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
      assertThat(in).as("metadata generated by spring-boot-configuration-processor").isNotNull();
      String json = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      assertThat(json).contains("\"tether.store.url\"", "\"tether.store.schema\"", "\"tether.store.migrate\"",
          "\"tether.worker.shutdown-timeout\"", "\"tether.handler-defaults.visibility\"",
          "\"tether.health-server.enabled\"", "\"tether.worker.watchdog.threshold\"",
          "\"tether.metrics.queue-depth\"", "\"tether.store.retain-backend-memory\"",
          "\"value\": \"validate\"");
    }
  }
}
