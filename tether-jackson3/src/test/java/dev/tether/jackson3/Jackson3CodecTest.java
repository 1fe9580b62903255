package dev.tether.jackson3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.cfg.DateTimeFeature;
import tools.jackson.databind.json.JsonMapper;

class Jackson3CodecTest {
  record Order(String sku, int quantity, List<String> notes) {}

  record Shipped(String sku, Instant at) {}

  enum Speed {
    EXPRESS;

    @Override
    public String toString() {
      return "Express delivery";
    }
  }

  record Parcel(String sku, Speed speed, List<Integer> weights, boolean fragile, long cents) {}

  /** Nothing Jackson can write: no getters, no public fields. */
  static final class Opaque {
    @SuppressWarnings("unused")
    private final int hidden = 1;
  }

  /** A POJO with a no-argument constructor and setters. */
  public static final class Receipt {
    private String orderSku;
    private long cents;

    public String getOrderSku() {
      return orderSku;
    }

    public void setOrderSku(String orderSku) {
      this.orderSku = orderSku;
    }

    public long getCents() {
      return cents;
    }

    public void setCents(long cents) {
      this.cents = cents;
    }
  }

  @Test
  void aRecordRoundTripsAsJson() {
    Jackson3Codec<Order> codec = Jackson3Codec.of(Order.class);
    byte[] json = codec.encode(new Order("A-1", 3, List.of("gift")));
    assertThat(new String(json, StandardCharsets.UTF_8)).isEqualTo("{\"sku\":\"A-1\",\"quantity\":3,\"notes\":[\"gift\"]}");
    assertThat(codec.decode(json)).isEqualTo(new Order("A-1", 3, List.of("gift")));
  }

  @Test
  void javaTimeValuesTravelAsIsoTextWithTheDefaultMapper() {
    Jackson3Codec<Shipped> codec = Jackson3Codec.of(Shipped.class);
    Shipped s = new Shipped("A-1", Instant.parse("2026-11-27T05:00:00Z"));
    byte[] json = codec.encode(s);
    assertThat(new String(json, StandardCharsets.UTF_8)).isEqualTo("{\"sku\":\"A-1\",\"at\":\"2026-11-27T05:00:00Z\"}");
    assertThat(codec.decode(json)).isEqualTo(s);
  }

  @Test
  void theApplicationsMapperDecidesHowValuesAreWritten() {
    JsonMapper numeric = JsonMapper.builder().enable(DateTimeFeature.WRITE_DATES_AS_TIMESTAMPS).build();
    Jackson3Codec<Shipped> codec = Jackson3Codec.of(numeric, Shipped.class);
    String json = new String(codec.encode(new Shipped("A-1", Instant.ofEpochSecond(5))), StandardCharsets.UTF_8);
    assertThat(json).doesNotContain("1970").contains("\"at\":5");
  }

  @Test
  void aPojoRoundTripsAndUnknownPropertiesFromANewerProducerAreIgnored() {
    Jackson3Codec<Receipt> codec = Jackson3Codec.of(Receipt.class);
    Receipt r = codec.decode("{\"orderSku\":\"A-1\",\"cents\":1250,\"addedLater\":true}".getBytes(StandardCharsets.UTF_8));
    assertThat(r.getOrderSku()).isEqualTo("A-1");
    assertThat(r.getCents()).isEqualTo(1250);
    assertThat(codec.decode(codec.encode(r)).getCents()).isEqualTo(1250);
  }

  @Test
  void aMapperThatRefusesUnknownPropertiesIsObeyed() {
    Jackson3Codec<Receipt> codec = Jackson3Codec.of(
        JsonMapper.builder().enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES).build(), Receipt.class);
    assertThatThrownBy(() -> codec.decode("{\"orderSku\":\"A-1\",\"addedLater\":true}".getBytes(StandardCharsets.UTF_8)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("addedLater");
  }

  @Test
  void aGenericTypeRoundTrips() {
    Jackson3Codec<List<Order>> codec = Jackson3Codec.of(Jackson3Codec.defaultMapper(), new TypeReference<List<Order>>() {});
    List<Order> orders = List.of(new Order("a", 1, List.of()), new Order("b", 2, List.of()));
    assertThat(codec.decode(codec.encode(orders))).isEqualTo(orders);
    assertThat(codec.toString()).contains("java.util.List").contains("Order");
  }

  @Test
  void aReflectedGenericTypeRoundTrips() throws Exception {
    java.lang.reflect.Type listOfOrders = Holder.class.getDeclaredField("orders").getGenericType();
    Jackson3Codec<List<Order>> codec = Jackson3Codec.of(Jackson3Codec.defaultMapper(), listOfOrders);
    List<Order> orders = List.of(new Order("a", 1, List.of("x")));
    assertThat(codec.decode(codec.encode(orders))).isEqualTo(orders).first().isInstanceOf(Order.class);
  }

  @SuppressWarnings("unused")
  private static final class Holder {
    List<Order> orders;
  }

  @Test
  void badJsonIsAnErrorNamingTheType() {
    Jackson3Codec<Order> codec = Jackson3Codec.of(Order.class);
    assertThatThrownBy(() -> codec.decode("{\"sku\": ".getBytes(StandardCharsets.UTF_8)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not JSON of a").hasMessageContaining("Order");
    assertThatThrownBy(() -> codec.decode("{\"quantity\": \"many\"}".getBytes(StandardCharsets.UTF_8)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Order");
    assertThatThrownBy(() -> codec.decode("null".getBytes(StandardCharsets.UTF_8)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("empty or null");
    assertThatThrownBy(() -> codec.decode(new byte[0]))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Order");
  }

  @Test
  void aValueJacksonCannotWriteIsAnErrorNamingTheType() {
    Jackson3Codec<Object> codec = Jackson3Codec.of(
        JsonMapper.builder().enable(SerializationFeature.FAIL_ON_EMPTY_BEANS).build(), Object.class);
    assertThatThrownBy(() -> codec.encode(new Object()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cannot write a java.lang.Object");
  }

  @Test
  void theDefaultMapperWritesEnumsByNameAndRefusesAValueWithNothingToWrite() {
    Jackson3Codec<Parcel> codec = Jackson3Codec.of(Parcel.class);
    Parcel p = new Parcel("A-1", Speed.EXPRESS, List.of(2, 3), true, 1250);
    assertThat(new String(codec.encode(p), StandardCharsets.UTF_8)).contains("\"speed\":\"EXPRESS\"");
    assertThat(codec.decode(codec.encode(p))).isEqualTo(p);
    assertThatThrownBy(() -> Jackson3Codec.of(Opaque.class).encode(new Opaque()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Opaque");
  }

  @Test
  void aQueueMovesBetweenTheJackson2AndJackson3CodecsDefaultMappers() {
    Parcel p = new Parcel("A-1", Speed.EXPRESS, List.of(2, 3), true, 1250);
    dev.tether.jackson.JacksonCodec<Parcel> jackson2 = dev.tether.jackson.JacksonCodec.of(Parcel.class);
    Jackson3Codec<Parcel> jackson3 = Jackson3Codec.of(Parcel.class);
    assertThat(jackson3.decode(jackson2.encode(p))).as("written by Jackson 2, read by Jackson 3").isEqualTo(p);
    assertThat(jackson2.decode(jackson3.encode(p))).as("written by Jackson 3, read by Jackson 2").isEqualTo(p);
  }
}
