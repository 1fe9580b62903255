package dev.tether.examples.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.jdbc.PostgresTestSchema;
import dev.tether.jdbc.TcpProxy;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The example application on PostgreSQL (the server TestPostgres chose), reached through a TCP
 * proxy that the test can cut, with Tether's tables in a schema of their own beside the
 * application's.
 */
@Import(PostgresReportsApplicationTest.DropSchema.class)
class PostgresReportsApplicationTest extends ReportsApplicationCompatibilityTest {
  static final PostgresTestSchema SCHEMA = new PostgresTestSchema("tether_boot_");
  static final TcpProxy PROXY = new TcpProxy(SCHEMA.url());

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", () -> PROXY.url(SCHEMA.url()));
    registry.add("spring.sql.init.platform", () -> "postgresql");
    registry.add("tether.store.schema", () -> SCHEMA.name() + "_tether");
    // a cut database is noticed within a connection timeout, not Hikari's default 30 s
    registry.add("spring.datasource.hikari.connection-timeout", () -> "2000");
  }

  /** Drops the schemas once the application has stopped (after its loops drained). */
  @TestConfiguration(proxyBeanMethods = false)
  static class DropSchema {
    @Bean
    DisposableBean dropTestSchemas() {
      return () -> {
        PROXY.close();
        try (java.sql.Connection c = java.sql.DriverManager.getConnection(SCHEMA.baseUrl());
            java.sql.Statement st = c.createStatement()) {
          st.execute("DROP SCHEMA IF EXISTS " + SCHEMA.name() + "_tether CASCADE");
        }
        SCHEMA.close();
      };
    }
  }

  @Test
  void readinessGoesDownWhenTheDatabaseIsCutAndUpWhenItIsBack() throws Exception {
    await().atMost(Duration.ofSeconds(30)).until(() -> get("/actuator/health/readiness").statusCode() == 200);
    PROXY.cut();
    try {
      await().atMost(Duration.ofSeconds(60)).until(() -> get("/actuator/health/readiness").statusCode() == 503);
      assertThat(get("/actuator/health/readiness").body()).contains("\"tetherReadiness\"").contains("unavailable");
      assertThat(get("/actuator/health/liveness").statusCode())
          .as("a database outage is not a reason to restart the process").isEqualTo(200);
    } finally {
      PROXY.restore();
    }
    await().atMost(Duration.ofSeconds(60)).until(() -> get("/actuator/health/readiness").statusCode() == 200);
  }

  @Test
  void tethersTablesAreInTheirOwnSchemaBesideTheApplications() {
    assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ?"
        + " AND table_name = 'tether_work_items'", Integer.class, SCHEMA.name() + "_tether")).isEqualTo(1);
    assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ?"
        + " AND table_name = 'reports'", Integer.class, SCHEMA.name())).isEqualTo(1);
  }
}
