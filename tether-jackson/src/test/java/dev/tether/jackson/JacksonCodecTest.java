package dev.tether.jackson;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class JacksonCodecTest {
  record Order(String sku, int quantity, List<String> notes) {}

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
    JacksonCodec<Order> codec = JacksonCodec.of(Order.class);
    byte[] json = codec.encode(new Order("A-1", 3, List.of("gift")));
    assertThat(new String(json, StandardCharsets.UTF_8)).isEqualTo("{\"sku\":\"A-1\",\"quantity\":3,\"notes\":[\"gift\"]}");
    assertThat(codec.decode(json)).isEqualTo(new Order("A-1", 3, List.of("gift")));
  }

  @Test
  void aPojoRoundTripsAndUnknownPropertiesFromANewerProducerAreIgnored() {
    JacksonCodec<Receipt> codec = JacksonCodec.of(Receipt.class);
    Receipt r = codec.decode("{\"orderSku\":\"A-1\",\"cents\":1250,\"addedLater\":true}".getBytes(StandardCharsets.UTF_8));
    assertThat(r.getOrderSku()).isEqualTo("A-1");
    assertThat(r.getCents()).isEqualTo(1250);
    assertThat(codec.decode(codec.encode(r)).getCents()).isEqualTo(1250);
  }

  @Test
  void aGenericTypeRoundTrips() {
    JacksonCodec<List<Order>> codec = JacksonCodec.of(new ObjectMapper(), new TypeReference<List<Order>>() {});
    List<Order> orders = List.of(new Order("a", 1, List.of()), new Order("b", 2, List.of()));
    assertThat(codec.decode(codec.encode(orders))).isEqualTo(orders);
    assertThat(codec.toString()).contains("java.util.List").contains("Order");
  }

  @Test
  void badJsonIsAnErrorNamingTheType() {
    JacksonCodec<Order> codec = JacksonCodec.of(Order.class);
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
    JacksonCodec<Object> codec = JacksonCodec.of(new ObjectMapper(), Object.class);
    assertThatThrownBy(() -> codec.encode(new Object()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cannot write a java.lang.Object");
  }
}
