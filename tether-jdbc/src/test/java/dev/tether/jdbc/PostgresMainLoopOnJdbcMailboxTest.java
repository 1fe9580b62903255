package dev.tether.jdbc;

class PostgresMainLoopOnJdbcMailboxTest extends MainLoopOnJdbcMailboxCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }
}
