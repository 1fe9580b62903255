package dev.tether.examples.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Runs the example as its command does (a real worker JVM, killed with kill -9) and checks that it
 * went as narrated.
 */
class DurableAgentExampleTest {
  @Test
  void theKilledRunResumesFromItsCheckpointAndItsAnswerIsAcknowledgedOnce() throws Exception {
    ByteArrayOutputStream narration = new ByteArrayOutputStream();
    DurableAgentExample.Outcome outcome;
    try (PrintStream out = new PrintStream(narration, true, StandardCharsets.UTF_8)) {
      outcome = DurableAgentExample.run(out);
    }
    String text = narration.toString(StandardCharsets.UTF_8);

    assertThat(outcome.answeredByFirst()).as(text).containsExactly(1, 2);
    assertThat(outcome.toolsByFirst()).containsExactly("searchIssues", "readFile");
    assertThat(outcome.resumed()).as("started from the checkpointed conversation").isTrue();
    assertThat(outcome.delivery()).isEqualTo(2);
    assertThat(outcome.answeredBySecond()).as("no model step asked again").containsExactly(3, 4, 5);
    assertThat(outcome.toolsBySecond()).containsExactly("editFile", "runTests");
    assertThat(outcome.answers()).singleElement().asString()
        .startsWith("Done with '" + DurableAgentExample.TASK + "'");
    assertThat(outcome.tasksLeft()).isZero();
    assertThat(outcome.asNarrated()).isTrue();
    assertThat(text).contains(">>> kill -9 worker-1", "resuming the checkpointed conversation",
        "acknowledged, as one step");
    assertThat(text).as("the tools got the model's arguments")
        .contains("2 issues match 'lease lost'", "applied 'log the lost lease once'");
    assertThat(List.of(text.split("\n"))).filteredOn(l -> l.contains("delivery 1 (attempt"))
        .as("the killed worker's narration is shown").hasSize(1);
  }
}
