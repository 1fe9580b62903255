package dev.tether.spring;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.DeserializationFeature;
import dev.tether.Codec;
import dev.tether.jackson.JacksonCodec;
import java.lang.reflect.Type;
import org.springframework.core.ResolvableType;

/**
 * Picks the codec for a body type: UTF-8 text for {@code String}, bytes as they are for {@code
 * byte[]}, JSON (Jackson, with the given mapper) for anything else. Thread-safe.
 */
public final class BodyCodecs {
  private final ObjectMapper mapper;

  /**
   * Creates the codecs.
   *
   * @param mapper the Jackson mapper for JSON bodies, or null for Tether's default (unknown
   *     properties ignored)
   */
  public BodyCodecs(ObjectMapper mapper) {
    this.mapper = mapper != null ? mapper
        : JsonMapper.builder().disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES).build();
  }

  /**
   * Returns the codec for a declared type.
   *
   * @param type the type
   * @param what what the type is of, for the error message
   * @param <T> the type
   * @return the codec
   * @throws IllegalStateException if the type is unknown (a raw or erased type)
   */
  @SuppressWarnings("unchecked")
  public <T> Codec<T> forType(ResolvableType type, String what) {
    Class<?> raw = type.resolve();
    if (raw == null || raw == Object.class) {
      throw new IllegalStateException("cannot tell the " + what + " type (" + type + "): declare it"
          + " in the implemented TetherHandler<T, R>, or return a codec of your own");
    }
    if (raw == String.class) {
      return (Codec<T>) Codec.utf8();
    }
    if (raw == byte[].class) {
      return (Codec<T>) Codec.bytes();
    }
    Type t = type.getType();
    return JacksonCodec.of(mapper, mapper.constructType(t));
  }

  /**
   * Returns the codec for a value sent to a queue without a handler here: by its runtime class.
   *
   * @param value the value
   * @param <T> its type
   * @return the codec
   */
  @SuppressWarnings("unchecked")
  public <T> Codec<T> forValue(T value) {
    if (value instanceof String) {
      return (Codec<T>) Codec.utf8();
    }
    if (value instanceof byte[]) {
      return (Codec<T>) Codec.bytes();
    }
    return (Codec<T>) JacksonCodec.of(mapper, value.getClass());
  }
}
