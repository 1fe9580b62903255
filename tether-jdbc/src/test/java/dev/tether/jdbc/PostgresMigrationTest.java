package dev.tether.jdbc;

class PostgresMigrationTest extends MigrationCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }
}
