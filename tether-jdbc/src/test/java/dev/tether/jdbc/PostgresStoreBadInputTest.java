package dev.tether.jdbc;

class PostgresStoreBadInputTest extends StoreBadInputCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }
}
