package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** How a library's error reaches the terminal: line by line, each made safe to print. */
class StoresLinesTest {
  private static final char ESC = 0x1b;

  @Test
  void everyLineIsShownEscapedAndMaskedAndBlankLinesLeftOut() {
    RuntimeException e = new RuntimeException("first\n\n  Detail: a " + ESC + "[31mred value\r\n"
        + "  URL jdbc:postgresql://h/db?user=u&password=hunter2");
    assertThat(Stores.lines(e, 20)).containsExactly("first", "Detail: a \\u001b[31mred value",
        Stores.oneLine(new RuntimeException("URL jdbc:postgresql://h/db?user=u&password=hunter2")));
    assertThat(String.join("\n", Stores.lines(e, 20))).doesNotContain("hunter2");
  }

  @Test
  void aLongMessageEndsWithHowManyLinesWereLeftOut() {
    StringBuilder m = new StringBuilder("head");
    for (int i = 1; i <= 30; i++) {
      m.append("\nline ").append(i);
    }
    assertThat(Stores.lines(new RuntimeException(m.toString()), 5))
        .containsExactly("head", "line 1", "line 2", "line 3",
            "... (27 more lines; --verbose shows the whole error)");
    assertThat(Stores.lines(new RuntimeException("a\nb"), 2)).containsExactly("a", "b");
  }

  @Test
  void anErrorWithoutAMessageIsNamedByItsType() {
    assertThat(Stores.lines(new IllegalStateException(), 20)).containsExactly("IllegalStateException");
  }
}
