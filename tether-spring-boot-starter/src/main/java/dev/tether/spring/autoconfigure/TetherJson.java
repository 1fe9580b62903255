package dev.tether.spring.autoconfigure;

import dev.tether.spring.JsonCodecFactory;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.util.ClassUtils;
import tools.jackson.databind.ObjectMapper;

/** Picks the JSON codecs when the application declares no {@link JsonCodecFactory}. */
final class TetherJson {
  private TetherJson() {}

  /**
   * The application's only (or primary) Jackson 3 mapper, else its Jackson 2 mapper (with {@code
   * tether-jackson} on the classpath), else Tether's default Jackson 3 mapper.
   */
  static JsonCodecFactory pick(BeanFactory beans) {
    ObjectMapper jackson3 = beans.getBeanProvider(ObjectMapper.class).getIfUnique();
    if (jackson3 != null) {
      return JsonCodecFactory.jackson3(jackson3);
    }
    ClassLoader loader = beans instanceof ConfigurableBeanFactory c && c.getBeanClassLoader() != null
        ? c.getBeanClassLoader() : TetherJson.class.getClassLoader();
    if (ClassUtils.isPresent("com.fasterxml.jackson.databind.ObjectMapper", loader)
        && ClassUtils.isPresent("dev.tether.jackson.JacksonCodec", loader)) {
      JsonCodecFactory jackson2 = Jackson2Json.fromContext(beans);
      if (jackson2 != null) {
        return jackson2;
      }
    }
    return JsonCodecFactory.jackson3Defaults();
  }
}
