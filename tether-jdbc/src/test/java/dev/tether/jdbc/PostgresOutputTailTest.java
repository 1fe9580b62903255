package dev.tether.jdbc;

class PostgresOutputTailTest extends OutputTailCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }
}
