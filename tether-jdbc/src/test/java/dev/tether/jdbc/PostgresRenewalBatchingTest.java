package dev.tether.jdbc;

class PostgresRenewalBatchingTest extends RenewalBatchingCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }
}
