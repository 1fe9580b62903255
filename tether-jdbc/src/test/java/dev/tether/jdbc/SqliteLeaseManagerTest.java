package dev.tether.jdbc;

class SqliteLeaseManagerTest extends LeaseManagerCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
