package dev.tether.spring.autoconfigure;

import dev.tether.spring.JsonCodecFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.util.ClassUtils;
import tools.jackson.databind.json.JsonMapper;

/** Picks the JSON codecs when the application declares no {@link JsonCodecFactory}. */
final class TetherJson {
  private static final Logger LOG = LoggerFactory.getLogger(TetherJson.class);

  private TetherJson() {}

  /**
   * The application's only (or primary) Jackson 3 {@code JsonMapper}, else its Jackson 2 JSON
   * mapper (with {@code tether-jackson} on the classpath), else Tether's default Jackson 3 mapper.
   */
  static JsonCodecFactory pick(BeanFactory beans) {
    JsonMapper jackson3 = beans.getBeanProvider(JsonMapper.class).getIfUnique();
    JsonCodecFactory jackson2 = jackson2Available(beans) ? Jackson2Json.fromContext(beans) : null;
    if (jackson3 != null) {
      if (jackson2 != null) {
        LOG.info("Tether writes JSON bodies with the application's Jackson 3 JsonMapper, not its"
            + " Jackson 2 ObjectMapper (a JsonCodecFactory bean chooses otherwise)");
      } else {
        LOG.info("Tether writes JSON bodies with the application's Jackson 3 JsonMapper");
      }
      return JsonCodecFactory.jackson3(jackson3);
    }
    if (jackson2 != null) {
      LOG.info("Tether writes JSON bodies with the application's Jackson 2 ObjectMapper");
      return jackson2;
    }
    LOG.info("Tether writes JSON bodies with its default Jackson 3 mapper (the application has"
        + " no JsonMapper bean)");
    return JsonCodecFactory.jackson3Defaults();
  }

  /**
   * Whether Jackson 2 and {@code tether-jackson} can be loaded, both by the application's class
   * loader and by the one that links {@link Jackson2Json}.
   */
  private static boolean jackson2Available(BeanFactory beans) {
    ClassLoader own = TetherJson.class.getClassLoader();
    ClassLoader app = beans instanceof ConfigurableBeanFactory c && c.getBeanClassLoader() != null
        ? c.getBeanClassLoader() : own;
    for (ClassLoader loader : new ClassLoader[] {own, app}) {
      if (!ClassUtils.isPresent("com.fasterxml.jackson.databind.ObjectMapper", loader)
          || !ClassUtils.isPresent("dev.tether.jackson.JacksonCodec", loader)) {
        return false;
      }
    }
    return true;
  }
}
