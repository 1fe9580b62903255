package dev.tether.jdbc;

class PostgresRecoverySweepTest extends RecoverySweepCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }
}
