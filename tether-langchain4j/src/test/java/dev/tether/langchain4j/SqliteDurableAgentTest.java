package dev.tether.langchain4j;

/** Durable agent runs with the queues on a SQLite file. */
class SqliteDurableAgentTest extends DurableAgentCompatibilityTest {
  @Override
  protected Queues.Kind kind() {
    return Queues.Kind.SQLITE;
  }
}
