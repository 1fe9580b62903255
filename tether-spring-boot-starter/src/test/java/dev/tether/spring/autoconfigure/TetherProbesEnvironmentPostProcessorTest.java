package dev.tether.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;

/** The probe groups name Tether's indicators only when they will exist. */
class TetherProbesEnvironmentPostProcessorTest {
  static final String LIVENESS_GROUP = "management.endpoint.health.group.liveness.include";

  @SpringBootApplication
  static class App {}

  @SpringBootApplication(exclude = TetherAutoConfiguration.class)
  static class AppWithoutTether {}

  @SpringBootApplication(excludeName = "dev.tether.spring.autoconfigure.TetherHealthAutoConfiguration")
  static class AppWithoutTethersHealth {}

  private static StandardEnvironment processed(Class<?> app, Map<String, Object> properties) {
    StandardEnvironment env = new StandardEnvironment();
    env.getPropertySources().addFirst(new MapPropertySource("test", properties));
    new TetherProbesEnvironmentPostProcessor().postProcessEnvironment(env, new SpringApplication(app));
    return env;
  }

  @Test
  void theGroupsNameTethersIndicatorsByDefault() {
    assertThat(processed(App.class, Map.of()).getProperty(LIVENESS_GROUP))
        .isEqualTo("livenessState,tetherLiveness");
  }

  @Test
  void anApplicationThatExcludesTethersAutoConfigurationGetsNoGroupsNamingItsIndicators() {
    assertThat(processed(App.class, Map.of("spring.autoconfigure.exclude",
        "org.example.Other, " + TetherAutoConfiguration.class.getName())).getProperty(LIVENESS_GROUP))
        .isNull();
    assertThat(processed(App.class, Map.of("spring.autoconfigure.exclude[0]",
        TetherHealthAutoConfiguration.class.getName())).getProperty(LIVENESS_GROUP)).isNull();
    assertThat(processed(AppWithoutTether.class, Map.of()).getProperty(LIVENESS_GROUP)).isNull();
    assertThat(processed(AppWithoutTethersHealth.class, Map.of()).getProperty(LIVENESS_GROUP)).isNull();
  }

  @Test
  void anApplicationsOwnGroupSettingWins() {
    assertThat(processed(App.class, Map.of(LIVENESS_GROUP, "livenessState")).getProperty(LIVENESS_GROUP))
        .isEqualTo("livenessState");
  }

  @Test
  void turnedOffIndicatorsAreNotNamedInTheGroups() {
    assertThat(processed(App.class, Map.of("management.health.tether.enabled", "false"))
        .getProperty(LIVENESS_GROUP)).isNull();
    assertThat(processed(App.class, Map.of("management.health.defaults.enabled", "false"))
        .getProperty(LIVENESS_GROUP)).isNull();
    assertThat(processed(App.class, Map.of("management.health.defaults.enabled", "false",
        "management.health.tether.enabled", "true")).getProperty(LIVENESS_GROUP)).isNotNull();
  }
}
