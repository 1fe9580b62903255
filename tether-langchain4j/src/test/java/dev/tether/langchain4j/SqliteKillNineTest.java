package dev.tether.langchain4j;

import dev.tether.jdbc.TestDatabase;

/** The kill -9 test on a SQLite file shared by the child and the parent. */
class SqliteKillNineTest extends KillNineCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
