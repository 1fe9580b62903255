package dev.tether.jdbc;

class PostgresJdbcMailboxTest extends JdbcMailboxCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }
}
