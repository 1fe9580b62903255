package dev.tether.langchain4j;

import dev.tether.jdbc.TestDatabase;

/** The kill -9 test on PostgreSQL (TestPostgres's server), a schema shared by child and parent. */
class PostgresKillNineTest extends KillNineCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }
}
