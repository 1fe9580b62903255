package dev.tether.jdbc;

class SqliteDashboardIndexesTest extends DashboardIndexesCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
