package dev.tether.jdbc;

class SqliteProcessTest extends ProcessCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
