package dev.tether.spring;

import dev.tether.Codec;
import java.util.Objects;
import org.springframework.core.ResolvableType;

/**
 * Picks the codec for a body type: UTF-8 text for {@code String}, bytes as they are for {@code
 * byte[]}, JSON ({@link JsonCodecFactory}) for anything else. Thread-safe.
 */
public final class BodyCodecs {
  private final JsonCodecFactory json;

  /**
   * Creates the codecs.
   *
   * @param json the JSON codecs for bodies other than text and bytes
   */
  public BodyCodecs(JsonCodecFactory json) {
    this.json = Objects.requireNonNull(json, "json");
  }

  /**
   * Returns what JSON bodies are written with.
   *
   * @return the JSON codecs
   */
  public JsonCodecFactory json() {
    return json;
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
    return (Codec<T>) json.codecFor(type.getType());
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
    return (Codec<T>) json.codecFor(value.getClass());
  }
}
