package dev.tether.langchain4j;

/** The kill -9 test on a SQLite file shared by the child and the parent. */
class SqliteKillNineTest extends KillNineCompatibilityTest {
  @Override
  protected Queues.Database newDatabase() {
    return new Queues.SqliteFile();
  }
}
