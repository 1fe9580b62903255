package dev.tether.langchain4j;

/** Durable agent runs with the queues in memory. */
class InMemoryDurableAgentTest extends DurableAgentCompatibilityTest {
  @Override
  protected Queues.Kind kind() {
    return Queues.Kind.IN_MEMORY;
  }
}
