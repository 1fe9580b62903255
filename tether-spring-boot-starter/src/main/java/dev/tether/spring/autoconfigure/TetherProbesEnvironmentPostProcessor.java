package dev.tether.spring.autoconfigure;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.annotation.MergedAnnotation;
import org.springframework.core.annotation.MergedAnnotations;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.util.ClassUtils;

/**
 * Puts Tether's health indicators in the Actuator's probe groups, as defaults that any setting of
 * the application overrides: turns the probes on ({@code management.endpoint.health.probes.enabled})
 * and adds {@code tetherLiveness} to the {@code liveness} group and {@code tetherReadiness} to
 * the {@code readiness} group, beside Spring's availability states. Does nothing when {@code
 * tether.health.probes} is false, Tether is disabled, the Actuator is absent, Tether's indicators
 * are turned off ({@code management.health.tether.enabled=false}), or Tether's
 * auto-configuration or its health auto-configuration is excluded ({@code
 * spring.autoconfigure.exclude}, or {@code exclude} of the application's
 * {@code @SpringBootApplication} or {@code @EnableAutoConfiguration}): the Actuator refuses to
 * start with a group naming an indicator that does not exist.
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
    if (excluded(environment, application) || !healthIndicatorsEnabled(environment)) {
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

  /**
   * Whether Tether's indicators are on: {@code management.health.tether.enabled}, else {@code
   * management.health.defaults.enabled}, else true (as the Actuator decides).
   */
  private static boolean healthIndicatorsEnabled(ConfigurableEnvironment environment) {
    Boolean tether = environment.getProperty("management.health.tether.enabled", Boolean.class);
    return tether != null ? tether
        : environment.getProperty("management.health.defaults.enabled", Boolean.class, true);
  }

  /** Whether the application excludes Tether's auto-configuration or its health auto-configuration. */
  private static boolean excluded(ConfigurableEnvironment environment, SpringApplication application) {
    Set<String> names = new HashSet<>(Binder.get(environment)
        .bind("spring.autoconfigure.exclude", Bindable.listOf(String.class)).orElse(List.of()));
    for (Object source : application.getAllSources()) {
      if (source instanceof Class<?> type) {
        MergedAnnotation<EnableAutoConfiguration> enable =
            MergedAnnotations.from(type, MergedAnnotations.SearchStrategy.TYPE_HIERARCHY)
                .get(EnableAutoConfiguration.class);
        if (enable.isPresent()) {
          for (Class<?> c : enable.getClassArray("exclude")) {
            names.add(c.getName());
          }
          names.addAll(List.of(enable.getStringArray("excludeName")));
        }
      }
    }
    return names.stream().map(String::trim).anyMatch(n -> n.equals(TetherAutoConfiguration.class.getName())
        || n.equals(TetherHealthAutoConfiguration.class.getName()));
  }
}
