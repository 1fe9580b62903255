package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CommandSpecTest {
  @Test
  void roundTripsThroughItsStoredJson() {
    CommandSpec s = new CommandSpec(List.of("echo", "a b", "é"), false, "process", Map.of("X", "1"));
    String json = s.toJson();
    assertThat(json).contains("\"argv\":[\"echo\",\"a b\",\"é\"]").contains("\"liveness\":\"process\"");
    assertThat(CommandSpec.fromJson(json)).isEqualTo(s);
  }

  @Test
  void shellSpecRunsThroughBinSh() {
    CommandSpec s = new CommandSpec(List.of("echo hi | wc -c"), true, null, null);
    assertThat(s.processArgv()).containsExactly("/bin/sh", "-c", "echo hi | wc -c");
    assertThat(s.liveness()).isEqualTo("output");
  }

  @Test
  void plainSpecNeverUsesAShell() {
    assertThat(CommandSpec.of(List.of("ls", "-l")).processArgv()).containsExactly("ls", "-l");
  }

  @Test
  void emptyCommandIsRejected() {
    assertThatThrownBy(() -> CommandSpec.of(List.of())).hasMessageContaining("empty command");
    assertThatThrownBy(() -> CommandSpec.of(List.of(" "))).hasMessageContaining("empty command");
  }

  @Test
  void unknownLivenessAndBadEnvNamesAreRejected() {
    assertThatThrownBy(() -> new CommandSpec(List.of("x"), false, "sometimes", null))
        .hasMessageContaining("unknown liveness 'sometimes'");
    assertThatThrownBy(() -> new CommandSpec(List.of("x"), false, null, Map.of("1BAD", "v")))
        .hasMessageContaining("invalid environment variable name '1BAD'");
  }

  @Test
  void malformedPayloadsGiveAClearError() {
    assertThatThrownBy(() -> CommandSpec.fromJson("not json")).hasMessageContaining("not a Tether command payload");
    assertThatThrownBy(() -> CommandSpec.fromJson("{\"argv\":[]}")).hasMessageContaining("empty command");
    assertThatThrownBy(() -> CommandSpec.fromJson("")).hasMessageContaining("no command payload");
    assertThatThrownBy(() -> CommandSpec.fromJson("{\"argv\":[\"" + "x".repeat(70_000) + "\"]}"))
        .hasMessageContaining("over the limit of " + CommandSpec.MAX_PAYLOAD_BYTES + " bytes");
  }

  @Test
  void displayQuotesArgumentsThatNeedIt() {
    assertThat(CommandSpec.of(List.of("echo", "a b", "it's", "plain")).display())
        .isEqualTo("echo 'a b' 'it'\\''s' plain");
  }
}
