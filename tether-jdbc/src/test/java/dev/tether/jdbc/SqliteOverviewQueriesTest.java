package dev.tether.jdbc;

class SqliteOverviewQueriesTest extends OverviewQueriesCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
