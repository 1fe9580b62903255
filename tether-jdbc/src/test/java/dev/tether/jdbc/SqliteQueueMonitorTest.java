package dev.tether.jdbc;

class SqliteQueueMonitorTest extends QueueMonitorCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
