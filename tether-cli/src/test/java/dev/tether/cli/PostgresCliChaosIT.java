package dev.tether.cli;

import dev.tether.jdbc.PostgresTestSchema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * {@link CliChaosBase} on PostgreSQL: every process gets {@code TETHER_DB=<URL>&currentSchema=<fresh
 * schema>}, the URL being the server {@code TestPostgres} chose for the test JVM (given, local or
 * embedded); the schema is created before and dropped after. PostgreSQL unreachable fails the test
 * with a message saying how to provide one.
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
