package dev.tether.cli;

import dev.tether.jdbc.PostgresTestSchema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * {@link LongJobsBase} on PostgreSQL: every process gets {@code TETHER_DB=<URL>&currentSchema=<fresh
 * schema>} on the server {@code TestPostgres} chose; PostgreSQL unreachable fails the test.
 */
class PostgresLongJobsIT extends LongJobsBase {
  private PostgresTestSchema schema;

  @BeforeEach
  void createSchema() {
    schema = new PostgresTestSchema("tether_long_");
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
