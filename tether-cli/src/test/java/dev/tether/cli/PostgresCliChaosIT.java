package dev.tether.cli;

import dev.tether.jdbc.PostgresTestSchema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * {@link CliChaosBase} on PostgreSQL: every process gets {@code
 * TETHER_DB=<TETHER_TEST_PG_URL>&currentSchema=<fresh schema>}; the schema is created before and
 * dropped after. PostgreSQL unreachable fails the test with a message saying how to provide one.
 */
class PostgresCliChaosIT extends CliChaosBase {
  private PostgresTestSchema schema;

  @BeforeEach
  void createSchema() {
    schema = new PostgresTestSchema("tether_cli_");
  }

  @AfterEach
  void dropSchema() {
    if (schema != null) {
      schema.close();
    }
  }

  @Override
  String storeUrl() {
    return schema.url();
  }

  @Override
  String engine() {
    return "postgresql";
  }
}
