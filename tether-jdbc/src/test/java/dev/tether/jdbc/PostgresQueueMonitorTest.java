package dev.tether.jdbc;

class PostgresQueueMonitorTest extends QueueMonitorCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }
}
