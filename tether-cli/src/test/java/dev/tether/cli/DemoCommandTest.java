package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The demo's closing hints paste into a shell as they are printed. */
class DemoCommandTest {
  @Test
  void aCommandOrPathWithABlankOrQuoteIsOneQuotedWord() {
    assertThat(DemoCommand.shellWord("./tether")).isEqualTo("./tether");
    assertThat(DemoCommand.shellWord("/tmp/tether-demo-1/demo-2.db")).isEqualTo("/tmp/tether-demo-1/demo-2.db");
    assertThat(DemoCommand.shellWord("/home/u/my projects/tether")).isEqualTo("'/home/u/my projects/tether'");
    assertThat(DemoCommand.shellWord("/tmp/it's")).isEqualTo("'/tmp/it'\\''s'");
  }
}
