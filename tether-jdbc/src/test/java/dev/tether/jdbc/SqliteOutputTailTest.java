package dev.tether.jdbc;

class SqliteOutputTailTest extends OutputTailCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
