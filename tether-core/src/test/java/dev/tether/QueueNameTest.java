package dev.tether;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tether.mailbox.InMemoryMailbox;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

class QueueNameTest {
  /** The rule written out by hand, independent of the regular expression. */
  static boolean followsRule(String s) {
    if (s.isEmpty() || s.length() > 128) {
      return false;
    }
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      boolean alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (!(alnum || (i > 0 && (c == '.' || c == '_' || c == ':' || c == '-')))) {
        return false;
      }
    }
    return true;
  }

  @Provide
  Arbitrary<String> names() {
    Arbitrary<String> ruleChars = Arbitraries.strings().withChars("aZ09._:-").ofMinLength(0).ofMaxLength(140);
    Arbitrary<String> anything = Arbitraries.strings().all().ofMaxLength(140);
    Arbitrary<String> nasty = Arbitraries.strings().withChars("a'\"%_;\\ \n\t\u0000é日🎉-").ofMaxLength(20);
    return Arbitraries.oneOf(ruleChars, anything, nasty);
  }

  @Property(tries = 2000)
  void aNameIsValidExactlyWhenItFollowsTheRuleAndInvalidNamesAreRefusedSafely(@ForAll("names") String name) {
    assertThat(QueueName.isValid(name)).isEqualTo(followsRule(name));
    if (followsRule(name)) {
      assertThat(QueueName.requireValid(name, "queue")).isSameAs(name);
      assertThat(InMemoryMailbox.builder(name).build().name()).isEqualTo(name);
    } else {
      assertThatThrownBy(() -> QueueName.requireValid(name, "queue"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("queue name must match " + QueueName.REGEX)
          .satisfies(e -> assertThat(e.getMessage()).as("printable ASCII only, bounded")
              .matches("[\\x20-\\x7e]{1,700}"));
      assertThatThrownBy(() -> InMemoryMailbox.builder(name))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("mailbox name must match");
    }
  }

  @Example
  void edgeCases() {
    assertThat(QueueName.isValid("x".repeat(128))).isTrue();
    assertThat(QueueName.isValid("x".repeat(129))).isFalse();
    assertThat(QueueName.isValid(null)).isFalse();
    assertThatThrownBy(() -> QueueName.requireValid("", "queue")).hasMessageEndingWith("was \"\" (empty)");
    assertThatThrownBy(() -> QueueName.requireValid("a\nb\"", "queue")).hasMessageEndingWith("was \"a\\u000ab\\\"\"");
    assertThatThrownBy(() -> QueueName.requireValid("%".repeat(500), "queue"))
        .hasMessageEndingWith("... (500 characters)");
    assertThatThrownBy(() -> QueueName.requireValid(null, "replyTo"))
        .isInstanceOf(NullPointerException.class).hasMessage("replyTo");
  }
}
