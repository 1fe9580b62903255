package dev.tether.jdbc;

class PostgresProcessTest extends ProcessCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }
}
