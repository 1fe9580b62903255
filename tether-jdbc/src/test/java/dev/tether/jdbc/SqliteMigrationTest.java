package dev.tether.jdbc;

class SqliteMigrationTest extends MigrationCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
