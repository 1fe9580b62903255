package dev.tether.langchain4j.example;

import static org.assertj.core.api.Assertions.assertThatCode;

import org.junit.jupiter.api.Test;

/** Keeps the example runnable: it ends by itself, and its result was acknowledged once. */
class DurableAgentExampleTest {
  @Test
  void theExampleRunsToItsAcknowledgedAnswer() {
    assertThatCode(() -> DurableAgentExample.main(new String[0])).doesNotThrowAnyException();
  }
}
