package dev.tether.jdbc;

class SqliteStoreBadInputTest extends StoreBadInputCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
