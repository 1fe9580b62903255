package dev.tether.spring;

import dev.tether.Codec;
import dev.tether.jackson3.Jackson3Codec;
import java.lang.reflect.Type;
import java.util.Objects;
import tools.jackson.databind.ObjectMapper;

/**
 * How the starter stores a body of a type other than {@code String} and {@code byte[]}: the JSON
 * codec for a declared or runtime type. The auto-configuration picks, unless the application
 * declares a bean of this type: the application's Jackson 3 mapper (the {@code JsonMapper} Spring
 * Boot 4 configures from {@code spring.jackson.*}), else its Jackson 2 {@code ObjectMapper} when
 * {@code tether-jackson} is on the classpath, else {@link #jackson3Defaults()}; it logs its choice
 * at INFO.
 *
 * <p>For a Jackson 2 mapper of your choice: {@code type -> JacksonCodec.of(mapper,
 * mapper.constructType(type))} (with {@code tether-jackson}). Implementations must be
 * thread-safe; a codec is asked for once per handler, and on each send to a queue without a
 * handler in the application.
 */
@FunctionalInterface
public interface JsonCodecFactory {
  /**
   * Returns the codec for a type.
   *
   * @param type the type: a class, or a parameterized type such as {@code List<Order>}
   * @return the codec; its values are of {@code type}
   */
  Codec<?> codecFor(Type type);

  /**
   * JSON with a Jackson 3 mapper.
   *
   * @param mapper the mapper
   * @return the factory
   */
  static JsonCodecFactory jackson3(ObjectMapper mapper) {
    Objects.requireNonNull(mapper, "mapper");
    return new JsonCodecFactory() {
      @Override
      public Codec<?> codecFor(Type type) {
        return Jackson3Codec.of(mapper, type);
      }

      @Override
      public String toString() {
        return "Jackson 3 (" + mapper.getClass().getName() + ")";
      }
    };
  }

  /**
   * JSON with Tether's default Jackson 3 mapper ({@link Jackson3Codec#defaultMapper()}: unknown
   * properties ignored).
   *
   * @return the factory
   */
  static JsonCodecFactory jackson3Defaults() {
    return jackson3(Jackson3Codec.defaultMapper());
  }
}
