package dev.tether.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.Codec;
import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkStatus;
import dev.tether.loop.WorkContext;
import dev.tether.spring.JsonCodecFactory;
import dev.tether.spring.TetherHandler;
import dev.tether.spring.TetherQueues;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Which JSON mapper writes the bodies: the application's Jackson 3 mapper (Spring Boot 4's
 * default, configured by {@code spring.jackson.*}), else its Jackson 2 mapper, else Tether's
 * default Jackson 3 mapper; a {@link JsonCodecFactory} bean wins over all of them.
 */
class TetherJsonTest {
  @TempDir Path dir;

  record Shipment(String orderId, Instant shippedAt) {}

  /** Records what it saw. */
  static final class Shipper implements TetherHandler<Shipment, String> {
    final List<Shipment> seen = new CopyOnWriteArrayList<>();

    @Override
    public String queue() {
      return "shipments";
    }

    @Override
    public String handle(Shipment request, WorkContext context) {
      seen.add(request);
      return "shipped " + request.orderId();
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class ShipperConfig {
    @Bean
    Shipper shipper() {
      return new Shipper();
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class Jackson2MapperConfig {
    @Bean
    com.fasterxml.jackson.databind.ObjectMapper jackson2Mapper() {
      return com.fasterxml.jackson.databind.json.JsonMapper.builder()
          .propertyNamingStrategy(com.fasterxml.jackson.databind.PropertyNamingStrategies.KEBAB_CASE)
          .build();
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class OwnFactoryConfig {
    @Bean
    JsonCodecFactory jsonCodecFactory() {
      return JsonCodecFactory.jackson3(tools.jackson.databind.json.JsonMapper.builder()
          .propertyNamingStrategy(tools.jackson.databind.PropertyNamingStrategies.UPPER_CAMEL_CASE)
          .build());
    }
  }

  private ApplicationContextRunner runner() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(TetherAutoConfiguration.class))
        .withUserConfiguration(ShipperConfig.class)
        .withPropertyValues("tether.worker.wait-time=1s", "tether.store.default-file=" + dir.resolve("t.db"));
  }

  private static final Shipment SHIPMENT = new Shipment("A-1", Instant.parse("2026-11-27T05:00:00Z"));

  /** Sends a shipment through the handler's queue; returns the stored JSON once it was handled. */
  private static String sendAndHandle(AssertableApplicationContext context) {
    assertThat(context).hasNotFailed();
    TetherStore store = context.getBean(TetherStore.class);
    long id = Long.parseLong(context.getBean(TetherQueues.class).send("shipments", SHIPMENT));
    await().atMost(Duration.ofSeconds(30)).until(() ->
        new QueueMonitor(store).item(id).map(i -> i.status() == WorkStatus.COMPLETED).orElse(false));
    assertThat(context.getBean(Shipper.class).seen).containsExactly(SHIPMENT);
    return new QueueMonitor(store).item(id).orElseThrow().inputAsString();
  }

  @Test
  void bootsJackson3MapperWritesTheBodiesWithTheApplicationsSettings() {
    runner().withConfiguration(AutoConfigurations.of(JacksonAutoConfiguration.class))
        .withPropertyValues("spring.jackson.property-naming-strategy=SNAKE_CASE")
        .run(context -> assertThat(sendAndHandle(context))
            .isEqualTo("{\"order_id\":\"A-1\",\"shipped_at\":\"2026-11-27T05:00:00Z\"}"));
  }

  @Test
  void withoutAnyMapperTetherUsesJackson3sDefaultsAndIgnoresUnknownProperties() {
    runner().run(context -> {
      assertThat(sendAndHandle(context)).isEqualTo("{\"orderId\":\"A-1\",\"shippedAt\":\"2026-11-27T05:00:00Z\"}");
      Codec<?> codec = context.getBean(TetherAutoConfiguration.TetherHandlers.class).specs().get(0).requestCodec();
      assertThat(codec.decode("{\"orderId\":\"B-2\",\"addedLater\":1}".getBytes(StandardCharsets.UTF_8)))
          .isEqualTo(new Shipment("B-2", null));
    });
  }

  @Test
  void anApplicationWithOnlyAJackson2MapperKeepsIt() {
    // java.time needs Jackson 2's JSR-310 module, which this mapper lacks: a body without an instant
    runner().withUserConfiguration(Jackson2MapperConfig.class).run(context -> {
      assertThat(context).hasNotFailed();
      TetherStore store = context.getBean(TetherStore.class);
      long id = Long.parseLong(context.getBean(TetherQueues.class).send("shipments", new Shipment("A-1", null)));
      await().atMost(Duration.ofSeconds(30)).until(() ->
          new QueueMonitor(store).item(id).map(i -> i.status() == WorkStatus.COMPLETED).orElse(false));
      assertThat(new QueueMonitor(store).item(id).orElseThrow().inputAsString())
          .isEqualTo("{\"order-id\":\"A-1\",\"shipped-at\":null}");
    });
  }

  @Test
  void withBothMappersBootsJackson3MapperWins() {
    runner().withConfiguration(AutoConfigurations.of(JacksonAutoConfiguration.class))
        .withUserConfiguration(Jackson2MapperConfig.class)
        .withPropertyValues("spring.jackson.property-naming-strategy=SNAKE_CASE")
        .run(context -> assertThat(sendAndHandle(context))
            .isEqualTo("{\"order_id\":\"A-1\",\"shipped_at\":\"2026-11-27T05:00:00Z\"}"));
  }

  @Configuration(proxyBeanMethods = false)
  static class OwnJsonMapperConfig {
    @Bean
    tools.jackson.databind.json.JsonMapper appMapper() {
      return tools.jackson.databind.json.JsonMapper.builder()
          .propertyNamingStrategy(tools.jackson.databind.PropertyNamingStrategies.KEBAB_CASE)
          .build();
    }
  }

  @Test
  void aJsonMapperTheApplicationDeclaresItselfIsUsed() {
    runner().withUserConfiguration(OwnJsonMapperConfig.class)
        .run(context -> assertThat(sendAndHandle(context))
            .isEqualTo("{\"order-id\":\"A-1\",\"shipped-at\":\"2026-11-27T05:00:00Z\"}"));
  }

  @Test
  void aJsonCodecFactoryBeanWinsOverTheApplicationsMapper() {
    runner().withConfiguration(AutoConfigurations.of(JacksonAutoConfiguration.class))
        .withUserConfiguration(OwnFactoryConfig.class)
        .withPropertyValues("spring.jackson.property-naming-strategy=SNAKE_CASE")
        .run(context -> assertThat(sendAndHandle(context)).startsWith("{\"OrderId\":\"A-1\""));
  }
}
