package dev.tether.jackson;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.tether.Codec;
import java.io.IOException;
import java.util.Objects;

/**
 * A {@link Codec} that stores values as JSON (UTF-8) with Jackson, so that a mailbox carries
 * records and POJOs: {@code JdbcMailbox.builder(store, "orders", JacksonCodec.of(Order.class),
 * JacksonCodec.of(Receipt.class))}.
 *
 * <p>{@link #of(Class)} uses a mapper of its own that ignores properties it does not know, so that
 * a producer may add fields before every consumer has them; give your application's mapper with
 * {@link #of(ObjectMapper, Class)} for its modules (Java time, Kotlin) and settings.
 *
 * <p>A value that cannot be encoded, and bytes that are not JSON of the type (or JSON {@code
 * null}), throw {@link IllegalArgumentException} naming the type and Jackson's reason; a mailbox
 * reports them as {@link dev.tether.mailbox.SerializationException} naming the message, and
 * dead-letters a stored message that cannot be decoded at once, without retrying it.
 *
 * <p>Thread-safe (as the mapper is once configured; do not reconfigure it while in use).
 *
 * @param <T> the value type
 */
public final class JacksonCodec<T> implements Codec<T> {
  private static final ObjectMapper DEFAULT_MAPPER =
      JsonMapper.builder().disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES).build();

  private final ObjectMapper mapper;
  private final JavaType type;

  private JacksonCodec(ObjectMapper mapper, JavaType type) {
    this.mapper = mapper;
    this.type = type;
  }

  /**
   * Returns a codec for {@code type} with Tether's default mapper (unknown properties ignored).
   *
   * @param type the value class
   * @param <T> the value type
   * @return the codec
   */
  public static <T> JacksonCodec<T> of(Class<T> type) {
    return of(DEFAULT_MAPPER, type);
  }

  /**
   * Returns a codec for {@code type} with the given mapper.
   *
   * @param mapper the mapper
   * @param type the value class
   * @param <T> the value type
   * @return the codec
   */
  public static <T> JacksonCodec<T> of(ObjectMapper mapper, Class<T> type) {
    Objects.requireNonNull(mapper, "mapper");
    Objects.requireNonNull(type, "type");
    return new JacksonCodec<>(mapper, mapper.constructType(type));
  }

  /**
   * Returns a codec for a generic type, such as {@code new TypeReference<List<Order>>() {}}.
   *
   * @param mapper the mapper
   * @param type the type
   * @param <T> the value type
   * @return the codec
   */
  public static <T> JacksonCodec<T> of(ObjectMapper mapper, TypeReference<T> type) {
    Objects.requireNonNull(mapper, "mapper");
    Objects.requireNonNull(type, "type");
    return new JacksonCodec<>(mapper, mapper.constructType(type));
  }

  /**
   * Returns a codec for a type Jackson has resolved (for frameworks that know a generic type at
   * run time).
   *
   * @param mapper the mapper
   * @param type the type
   * @param <T> the value type (unchecked: the caller vouches that it matches {@code type})
   * @return the codec
   */
  public static <T> JacksonCodec<T> of(ObjectMapper mapper, JavaType type) {
    Objects.requireNonNull(mapper, "mapper");
    Objects.requireNonNull(type, "type");
    return new JacksonCodec<>(mapper, type);
  }

  /**
   * Encodes a value as UTF-8 JSON.
   *
   * @param value the value; not null
   * @return the JSON bytes
   * @throws IllegalArgumentException if Jackson cannot write the value
   */
  @Override
  public byte[] encode(T value) {
    Objects.requireNonNull(value, "value");
    try {
      return mapper.writerFor(type).writeValueAsBytes(value);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(
          "cannot write a " + type.toCanonical() + " as JSON: " + e.getOriginalMessage(), e);
    }
  }

  /**
   * Decodes UTF-8 JSON into a value.
   *
   * @param bytes the JSON bytes
   * @return the value, never null
   * @throws IllegalArgumentException if the bytes are not JSON of the type, or are JSON null
   */
  @Override
  public T decode(byte[] bytes) {
    Objects.requireNonNull(bytes, "bytes");
    T value;
    try {
      value = mapper.readValue(bytes, type);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(
          "not JSON of a " + type.toCanonical() + ": " + e.getOriginalMessage(), e);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read JSON of a " + type.toCanonical() + ": " + e, e);
    }
    if (value == null) {
      throw new IllegalArgumentException(
          "not JSON of a " + type.toCanonical() + ": the stored JSON is empty or null");
    }
    return value;
  }

  /**
   * Returns the type this codec reads and writes.
   *
   * @return the Jackson type
   */
  public JavaType type() {
    return type;
  }

  @Override
  public String toString() {
    return "JacksonCodec[" + type.toCanonical() + "]";
  }
}
