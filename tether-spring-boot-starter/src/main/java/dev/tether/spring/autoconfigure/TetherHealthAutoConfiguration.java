package dev.tether.spring.autoconfigure;

import dev.tether.jdbc.TetherStore;
import dev.tether.spring.TetherWorkers;
import java.time.Duration;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * Actuator health of Tether, when the Actuator's health support is on the classpath: {@code
 * tetherLiveness} (the loops beat) and {@code tetherReadiness} (the store is available and the
 * loops are ready). With {@code tether.health.probes} (default true) they belong to the {@code
 * liveness} and {@code readiness} groups ({@code /actuator/health/liveness}, {@code
 * /actuator/health/readiness}), beside Spring's own availability states. {@code
 * management.health.tether.enabled=false} (or {@code management.health.defaults.enabled=false})
 * turns both off.
 */
@AutoConfiguration(after = TetherAutoConfiguration.class)
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnBean(TetherStore.class)
@ConditionalOnEnabledHealthIndicator("tether")
public class TetherHealthAutoConfiguration {

  /** Name of the liveness indicator (loops beating). */
  public static final String LIVENESS = "tetherLiveness";

  /** Name of the readiness indicator (store available, loops ready). */
  public static final String READINESS = "tetherReadiness";

  /** Creates the auto-configuration. */
  public TetherHealthAutoConfiguration() {}

  /**
   * Liveness: UP while every loop beat within the watchdog's threshold (the watchdog, when on,
   * would end the process past it; when it is off, the orchestrator's liveness probe restarts
   * the process instead); UP with no loops.
   *
   * @param workers the workers, if this application runs any
   * @return the indicator
   */
  @Bean(name = LIVENESS)
  @ConditionalOnMissingBean(name = LIVENESS)
  public HealthIndicator tetherLiveness(ObjectProvider<TetherWorkers> workers) {
    return () -> {
      TetherWorkers w = workers.getIfAvailable();
      if (w == null || !w.isRunning()) {
        return Health.up().withDetail("loops", 0).build();
      }
      Map<String, Duration> ages = w.heartbeatAges();
      Duration threshold = w.settings().livenessThreshold();
      Health.Builder b = Health.up();
      for (Map.Entry<String, Duration> e : ages.entrySet()) {
        b.withDetail(e.getKey(), "last beat " + e.getValue().toMillis() + " ms ago");
        if (threshold != null && e.getValue().compareTo(threshold) >= 0) {
          b.down().withDetail("stalled", e.getKey());
        }
      }
      return b.build();
    };
  }

  /**
   * Readiness: UP while the store is available (as its calls have seen; a store without loops
   * is probed) and every loop is ready.
   *
   * @param store the store
   * @param workers the workers, if this application runs any
   * @return the indicator
   */
  @Bean(name = READINESS)
  @ConditionalOnMissingBean(name = READINESS)
  public HealthIndicator tetherReadiness(TetherStore store, ObjectProvider<TetherWorkers> workers) {
    return () -> {
      TetherWorkers w = workers.getIfAvailable();
      boolean hasLoops = w != null && !w.loops().isEmpty();
      boolean storeUp = hasLoops ? store.isAvailable() : store.probe();
      boolean loopsReady = w == null || w.loopsReady();
      Health.Builder b = storeUp && loopsReady ? Health.up() : Health.down();
      return b.withDetail("store", storeUp ? "available" : "unavailable")
          .withDetail("engine", store.engine().name())
          .withDetail("loops", w == null ? "none" : loopsReady ? "ready" : "not ready")
          .build();
    };
  }
}
