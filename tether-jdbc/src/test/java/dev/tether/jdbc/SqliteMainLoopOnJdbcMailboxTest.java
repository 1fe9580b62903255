package dev.tether.jdbc;

class SqliteMainLoopOnJdbcMailboxTest extends MainLoopOnJdbcMailboxCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
