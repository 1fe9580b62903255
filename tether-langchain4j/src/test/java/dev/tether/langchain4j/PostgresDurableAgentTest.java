package dev.tether.langchain4j;

/** Durable agent runs with the queues on PostgreSQL (TestPostgres's server). */
class PostgresDurableAgentTest extends DurableAgentCompatibilityTest {
  @Override
  protected Queues.Kind kind() {
    return Queues.Kind.POSTGRES;
  }
}
