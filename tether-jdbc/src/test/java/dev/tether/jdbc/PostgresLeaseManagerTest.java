package dev.tether.jdbc;

class PostgresLeaseManagerTest extends LeaseManagerCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }
}
