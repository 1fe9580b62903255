package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code enqueue} refuses what a worker would refuse, with one line and exit status 2 and nothing
 * stored; a key already taken by another command is exit status 1 naming the item; {@code ls}
 * shows priority and due time and says when it truncates. In-process.
 */
class EnqueueRefusalsTest {
  @TempDir Path dir;

  record Run(int code, String out, String err) {}

  private Run tether(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = TetherCli.execute(args, new PrintWriter(out, true), new PrintWriter(err, true));
    return new Run(code, out.toString(), err.toString());
  }

  private Run withDb(String cmd, String... rest) {
    List<String> a = new ArrayList<>(List.of(cmd, "--db", dir.resolve("t.db").toString()));
    a.addAll(Arrays.asList(rest));
    return tether(a.toArray(new String[0]));
  }

  private void assertRefused(Run r, int code, String contains) {
    assertThat(r.code()).as("exit code, stderr: %s", r.err()).isEqualTo(code);
    assertThat(r.err().strip()).doesNotContain("\n").contains(contains);
    assertThat(r.err()).doesNotContain("\tat ").doesNotContain("Exception");
    assertThat(r.out()).isEmpty();
  }

  private int items() {
    Run ls = withDb("ls", "--json");
    return ls.code() != 0 ? 0 : ls.out().split("\"id\"", -1).length - 1;
  }

  @Test
  void aCommandOverThePayloadLimitIsRefusedBeforeItIsStored() {
    String big = "a".repeat(70_000);
    assertRefused(withDb("enqueue", "--", "echo", big), 2, "over the limit of 65536 bytes");
    assertThat(items()).isZero();
    assertThat(withDb("enqueue", "--", "echo", "a".repeat(60_000)).code()).isZero();
  }

  @Test
  void badEnvironmentEntriesAreRefused() {
    assertRefused(withDb("enqueue", "--env", "NOEQUALS", "--", "true"), 2, "is not NAME=VALUE");
    assertRefused(withDb("enqueue", "--env", "=x", "--", "true"), 2, "is not NAME=VALUE");
    assertRefused(withDb("enqueue", "--env", "bad name=1", "--", "true"), 2,
        "invalid environment variable name 'bad name'");
    assertRefused(withDb("enqueue", "--env", "A=x\0y", "--", "true"), 2, "NUL character");
    assertThat(items()).isZero();
  }

  @Test
  void textThatWasNotUtf8IsRefusedNotStoredWithReplacementCharacters() throws Exception {
    // the JVM decodes argument bytes that are not UTF-8 as U+FFFD
    assertRefused(withDb("enqueue", "--", "echo", "caf\uFFFD"), 2,
        "argument 2 is not valid UTF-8");
    assertRefused(withDb("enqueue", "--env", "A=\uFFFD", "--", "true"), 2, "--env 1 is not valid UTF-8");
    Path latin1 = dir.resolve("latin1.txt");
    Files.write(latin1, new byte[] {'e', 'c', 'h', 'o', ' ', 'a', '\n', 'e', 'c', 'h', 'o', ' ', 'c',
        'a', 'f', (byte) 0xe9, '\n'});
    assertRefused(withDb("enqueue", "--file", latin1.toString()), 2,
        "--file " + latin1 + " is not valid UTF-8: line 2 (byte 16 of the file)");
    assertThat(items()).isZero();
    Run ok = withDb("enqueue", "--", "echo", "café ✓");
    assertThat(ok.code()).isZero();
    assertThat(withDb("ls").out()).contains("café ✓");
  }

  @Test
  void aPathNoFileSystemCanNameIsAUsageErrorOfOneLine() {
    // a lone surrogate cannot be encoded in any charset: Path.of throws InvalidPathException
    assertRefused(withDb("enqueue", "--file", "\ud800"), 2,
        "Invalid value for option '--file': '\\ud800' is not a path this system can name");
    assertRefused(withDb("ls", "--db-password-file", "x\ud800y"), 2,
        "Invalid value for option '--db-password-file': 'x\\ud800y' is not a path this system can name");
    assertRefused(tether("enqueue", "--db", "\ud800", "--", "true"), 1,
        "--db '\\ud800' is not a path this system can name");
    assertRefused(withDb("enqueue", "--file", "a\n\ud800"), 2, "'a\\n\\ud800' is not a path");
    assertRefused(tether("enqueue", "--db", "a\r\n\ud800", "--", "true"), 1,
        "--db 'a\\r\\n\\ud800' is not a path this system can name");
    assertThat(items()).isZero();
  }

  @Test
  void theSameKeyWithAnotherCommandIsAFailureNamingTheExistingItem() {
    assertThat(withDb("enqueue", "--key", "k1", "--", "echo", "one").out().strip()).isEqualTo("1");
    assertThat(withDb("enqueue", "--key", "k1", "--", "echo", "one").out().strip()).isEqualTo("1");
    assertRefused(withDb("enqueue", "--key", "k1", "--", "echo", "two"), 1,
        "--key 'k1' on queue 'default' is already item 1 with another command: echo one");
    assertThat(items()).isEqualTo(1);
  }

  @Test
  void lsShowsPriorityAndDueTimeAndSaysWhenItTruncates() {
    withDb("enqueue", "--priority", "7", "--delay", "1h", "--", "echo", "later");
    withDb("enqueue", "--", "echo", "now");
    withDb("enqueue", "--", "echo", "third");
    Run ls = withDb("ls");
    assertThat(ls.code()).isZero();
    List<String> lines = ls.out().lines().toList();
    assertThat(lines.get(0)).contains("PRIORITY").contains("DUE");
    assertThat(lines).anySatisfy(l -> assertThat(l).contains("later").containsPattern(" 7 +in (59m|1h)"));
    assertThat(lines).anySatisfy(l -> assertThat(l).contains("echo now").containsPattern(" 0 +now "));
    assertThat(ls.out()).doesNotContain(" of ");
    Run two = withDb("ls", "--limit", "2");
    assertThat(two.out()).contains("(2 of 3 items, newest first; --limit N shows more)");
    assertThat(withDb("ls", "--limit", "3").out()).doesNotContain(" of 3 items");
  }
}
