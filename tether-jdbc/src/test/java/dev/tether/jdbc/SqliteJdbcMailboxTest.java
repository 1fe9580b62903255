package dev.tether.jdbc;

class SqliteJdbcMailboxTest extends JdbcMailboxCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
