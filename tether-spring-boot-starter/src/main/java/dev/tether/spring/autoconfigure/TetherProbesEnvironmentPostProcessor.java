package dev.tether.spring.autoconfigure;

import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.util.ClassUtils;

/**
 * Puts Tether's health indicators in the Actuator's probe groups, as defaults that any setting of
 * the application overrides: turns the probes on ({@code management.endpoint.health.probes.enabled})
 * and adds {@code tetherLiveness} to the {@code liveness} group and {@code tetherReadiness} to
 * the {@code readiness} group, beside Spring's availability states. Does nothing when {@code
 * tether.health.probes} is false, Tether is disabled, or the Actuator is absent.
 */
public class TetherProbesEnvironmentPostProcessor implements EnvironmentPostProcessor {
  private static final String SOURCE = "tetherProbeDefaults";

  /** Creates the post-processor (Spring Boot does, from {@code spring.factories}). */
  public TetherProbesEnvironmentPostProcessor() {}

  @Override
  public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
    if (!environment.getProperty("tether.enabled", Boolean.class, true)
        || !environment.getProperty("tether.health.probes", Boolean.class, true)
        || !ClassUtils.isPresent("org.springframework.boot.health.contributor.HealthIndicator",
            application.getClassLoader())) {
      return;
    }
    Map<String, Object> defaults = new LinkedHashMap<>();
    defaults.put("management.endpoint.health.probes.enabled", "true");
    defaults.put("management.endpoint.health.group.liveness.include",
        "livenessState," + TetherHealthAutoConfiguration.LIVENESS);
    defaults.put("management.endpoint.health.group.readiness.include",
        "readinessState," + TetherHealthAutoConfiguration.READINESS);
    environment.getPropertySources().addLast(new MapPropertySource(SOURCE, defaults));
  }
}
