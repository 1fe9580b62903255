package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ShellWordsTest {
  @Test
  void whitespaceSeparatesWords() {
    assertThat(ShellWords.split("  echo   hello\tworld ")).containsExactly("echo", "hello", "world");
  }

  @Test
  void blankLineHasNoWords() {
    assertThat(ShellWords.split("   ")).isEmpty();
  }

  @Test
  void singleQuotesKeepEverythingLiterally() {
    assertThat(ShellWords.split("echo 'a  b' '$HOME' 'x\\y'"))
        .containsExactly("echo", "a  b", "$HOME", "x\\y");
  }

  @Test
  void doubleQuotesKeepSpacesAndUnescapeOnlyShellSpecials() {
    assertThat(ShellWords.split("echo \"a \\\"b\\\" \\$c \\\\ \\n\""))
        .containsExactly("echo", "a \"b\" $c \\ \\n");
  }

  @Test
  void backslashOutsideQuotesMakesTheNextCharacterLiteral() {
    assertThat(ShellWords.split("echo a\\ b \\'c")).containsExactly("echo", "a b", "'c");
  }

  @Test
  void adjacentQuotedPartsJoinIntoOneWord() {
    assertThat(ShellWords.split("x'a b'\"c d\"e")).containsExactly("xa bc de");
  }

  @Test
  void emptyQuotesMakeAnEmptyWord() {
    assertThat(ShellWords.split("printf '' \"\"")).containsExactly("printf", "", "");
  }

  @Test
  void nothingIsExpanded() {
    assertThat(ShellWords.split("echo $HOME *.txt ~ `id` ; rm")).containsExactly("echo", "$HOME", "*.txt", "~", "`id`", ";", "rm");
  }

  @Test
  void unterminatedSingleQuoteIsAnErrorNamingTheColumn() {
    assertThatThrownBy(() -> ShellWords.split("echo 'abc"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unterminated single quote at column 6");
  }

  @Test
  void unterminatedDoubleQuoteIsAnError() {
    assertThatThrownBy(() -> ShellWords.split("echo \"abc\\\""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unterminated double quote");
  }

  @Test
  void trailingBackslashIsAnError() {
    assertThatThrownBy(() -> ShellWords.split("echo abc\\"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("trailing backslash");
  }
}
