package dev.tether.jdbc;

class PostgresOverviewQueriesTest extends OverviewQueriesCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }
}
