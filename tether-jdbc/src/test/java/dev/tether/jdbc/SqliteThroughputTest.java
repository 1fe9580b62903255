package dev.tether.jdbc;

import java.sql.Connection;

class SqliteThroughputTest extends ThroughputCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }

  @Override
  void failCompletionOf(Connection c, long id) throws Exception {
    execute(c, "CREATE TRIGGER fail_completion BEFORE UPDATE OF status ON tether_work_items"
        + " WHEN NEW.id = " + id + " AND NEW.status = 'completed'"
        + " BEGIN SELECT RAISE(ABORT, 'completion refused by test trigger'); END");
  }
}
