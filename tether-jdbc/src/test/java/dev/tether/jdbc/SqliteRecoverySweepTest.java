package dev.tether.jdbc;

class SqliteRecoverySweepTest extends RecoverySweepCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
