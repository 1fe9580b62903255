package dev.tether.jackson3;

import dev.tether.Codec;
import java.lang.reflect.Type;
import java.util.Objects;
import tools.jackson.core.JacksonException;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.cfg.EnumFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * A {@link Codec} that stores values as JSON (UTF-8) with Jackson 3 ({@code tools.jackson}, the
 * JSON library of Spring Boot 4), so that a mailbox carries records and POJOs: {@code
 * JdbcMailbox.builder(store, "orders", Jackson3Codec.of(Order.class), Jackson3Codec.of(Receipt.class))}.
 For Jackson 2 ({@code com.fasterxml.jackson.databind}) use {@code tether-jackson}'s {@code
 * JacksonCodec}.
 *
 * <p>{@link #of(Class)} uses a mapper of its own ({@link #defaultMapper()}): it ignores properties
 * it does not know, so that a producer may add fields before every consumer has them; writes and
 * reads enums by {@code name()} and refuses a value with no properties to write, as {@code
 * JacksonCodec}'s default mapper does (Jackson 3's own defaults use {@code toString()} and write
 * {@code {}}); otherwise Jackson 3's defaults, such as {@code java.time} values as ISO-8601 text.
 * Records and POJOs of strings, numbers, booleans, enums and collections read the same with
 * either codec's default mapper, so a queue may move from one to the other. Give your
 * application's mapper with {@link #of(ObjectMapper, Class)} for its modules and settings.
 *
 * <p>A value that cannot be encoded, and bytes that are not JSON of the type (or JSON {@code
 * null}), throw {@link IllegalArgumentException} naming the type and Jackson's reason; a mailbox
 * reports them as {@link dev.tether.mailbox.SerializationException} naming the message, and
 * dead-letters a stored message that cannot be decoded at once, without retrying it.
 *
 * <p>Thread-safe (Jackson 3 mappers are immutable).
 *
 * @param <T> the value type
 */
public final class Jackson3Codec<T> implements Codec<T> {
  private static final ObjectMapper DEFAULT_MAPPER = JsonMapper.builder()
      .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
      .disable(EnumFeature.WRITE_ENUMS_USING_TO_STRING)
      .disable(EnumFeature.READ_ENUMS_USING_TO_STRING)
      .enable(SerializationFeature.FAIL_ON_EMPTY_BEANS)
      .build();

  private final ObjectMapper mapper;
  private final JavaType type;

  private Jackson3Codec(ObjectMapper mapper, JavaType type) {
    this.mapper = mapper;
    this.type = type;
  }

  /**
   * Returns Tether's default mapper: unknown properties ignored, enums by name, a value with no
   * properties refused; otherwise Jackson 3's defaults.
   *
   * @return the mapper
   */
  public static ObjectMapper defaultMapper() {
    return DEFAULT_MAPPER;
  }

  /**
   * Returns a codec for {@code type} with Tether's default mapper ({@link #defaultMapper()}).
   *
   * @param type the value class
   * @param <T> the value type
   * @return the codec
   */
  public static <T> Jackson3Codec<T> of(Class<T> type) {
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
  public static <T> Jackson3Codec<T> of(ObjectMapper mapper, Class<T> type) {
    Objects.requireNonNull(mapper, "mapper");
    Objects.requireNonNull(type, "type");
    return new Jackson3Codec<>(mapper, mapper.constructType(type));
  }

  /**
   * Returns a codec for a generic type, such as {@code new TypeReference<List<Order>>() {}}.
   *
   * @param mapper the mapper
   * @param type the type
   * @param <T> the value type
   * @return the codec
   */
  public static <T> Jackson3Codec<T> of(ObjectMapper mapper, TypeReference<T> type) {
    Objects.requireNonNull(mapper, "mapper");
    Objects.requireNonNull(type, "type");
    return new Jackson3Codec<>(mapper, mapper.constructType(type));
  }

  /**
   * Returns a codec for a type known only at run time (for frameworks that resolve generic types,
   * such as a handler's declared message type).
   *
   * @param mapper the mapper
   * @param type the type
   * @param <T> the value type (unchecked: the caller vouches that it matches {@code type})
   * @return the codec
   */
  public static <T> Jackson3Codec<T> of(ObjectMapper mapper, Type type) {
    Objects.requireNonNull(mapper, "mapper");
    Objects.requireNonNull(type, "type");
    return new Jackson3Codec<>(mapper, mapper.constructType(type));
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
    } catch (JacksonException e) {
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
    } catch (JacksonException e) {
      throw new IllegalArgumentException(
          "not JSON of a " + type.toCanonical() + ": " + e.getOriginalMessage(), e);
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
    return "Jackson3Codec[" + type.toCanonical() + "]";
  }
}
