package dev.tether.spring.autoconfigure;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tether.Codec;
import dev.tether.jackson.JacksonCodec;
import dev.tether.spring.JsonCodecFactory;
import java.lang.reflect.Type;
import org.springframework.beans.factory.BeanFactory;

/**
 * The application's Jackson 2 mapper, when Jackson 2 and {@code tether-jackson} are on the
 * classpath (both optional for the starter). Loaded only after {@link TetherJson} found them there,
 * so that an application without them never links this class.
 */
final class Jackson2Json {
  private Jackson2Json() {}

  /**
   * JSON with the application's only (or primary) Jackson 2 mapper, or null when it has none or
   * that mapper writes another format (an {@code XmlMapper}, say).
   */
  static JsonCodecFactory fromContext(BeanFactory beans) {
    ObjectMapper mapper = beans.getBeanProvider(ObjectMapper.class).getIfUnique();
    if (mapper == null || !"JSON".equals(mapper.getFactory().getFormatName())) {
      return null;
    }
    return new JsonCodecFactory() {
      @Override
      public Codec<?> codecFor(Type type) {
        return JacksonCodec.of(mapper, mapper.constructType(type));
      }

      @Override
      public String toString() {
        return "Jackson 2 (" + mapper.getClass().getName() + ")";
      }
    };
  }
}
