package dev.tether.jdbc;

class SqliteQueueAdminTest extends QueueAdminCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
