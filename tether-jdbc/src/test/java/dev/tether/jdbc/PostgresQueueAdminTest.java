package dev.tether.jdbc;

class PostgresQueueAdminTest extends QueueAdminCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }
}
