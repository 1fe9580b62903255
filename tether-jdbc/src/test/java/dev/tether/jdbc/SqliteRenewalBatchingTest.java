package dev.tether.jdbc;

class SqliteRenewalBatchingTest extends RenewalBatchingCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
