package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.CharRange;
import net.jqwik.api.constraints.Chars;
import net.jqwik.api.constraints.NotBlank;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.constraints.StringLength;

/** Shell quoting round trips: what {@code display()} prints, {@code split} reads back. */
class ShellWordsPropertiesTest {
  @Property(tries = 500)
  void displayedCommandSplitsBackIntoTheSameArgv(
      @ForAll @NotBlank @StringLength(max = 10) @CharRange(from = 'a', to = 'z') String program,
      @ForAll @Size(max = 6) List<@StringLength(max = 12) @Chars({'a', 'b', ' ', '\'', '"', '\\', '$', '`', '*', ';', '\t', '\n', 'é'}) String> args) {
    List<String> argv = new java.util.ArrayList<>();
    argv.add(program);
    argv.addAll(args);
    assertThat(ShellWords.split(CommandSpec.of(argv).display())).isEqualTo(argv);
  }

  @Property(tries = 300)
  void splittingNeverThrowsAnythingButIllegalArgument(
      @ForAll @StringLength(max = 30) @Chars({'a', ' ', '\'', '"', '\\', '\n'}) String line) {
    try {
      List<String> words = ShellWords.split(line);
      assertThat(words).doesNotContainNull();
    } catch (IllegalArgumentException expected) {
      assertThat(expected.getMessage()).containsAnyOf("unterminated", "trailing backslash");
    }
  }
}
