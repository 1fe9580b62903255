package dev.tether.jdbc;

class PostgresHeartbeatThreadTest extends HeartbeatThreadCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }
}
