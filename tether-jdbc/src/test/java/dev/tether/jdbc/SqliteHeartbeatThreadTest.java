package dev.tether.jdbc;

class SqliteHeartbeatThreadTest extends HeartbeatThreadCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
