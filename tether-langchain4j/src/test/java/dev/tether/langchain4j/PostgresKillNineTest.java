package dev.tether.langchain4j;

/** The kill -9 test on PostgreSQL (TestPostgres's server), a schema shared by child and parent. */
class PostgresKillNineTest extends KillNineCompatibilityTest {
  @Override
  protected Queues.Database newDatabase() {
    return new Queues.PostgresSchema();
  }
}
