package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * The CLI fed random argv in-process against a temp SQLite store: random subcommands (known,
 * unknown, empty), options of every command (so options of the wrong command too), unknown flags,
 * huge numbers, non-ASCII and empty strings, good and bad durations, queue names and ids, random
 * NUL-free strings. Every run must end with exit code 0, 1 or 2 and no uncaught exception; without
 * {@code --verbose}, standard error (the CLI's and the process's, where library logs go) must hold
 * no stack trace; a run that does not exit 0 must leave the store's tables exactly as they were.
 *
 * <p>Every one-shot command gets {@code --db STORE} right after its name, so no run can touch a
 * store in the working directory. The long-running commands ({@code worker}, {@code serve},
 * {@code demo}) always get an unknown flag first: their parsing is exercised, but none starts.
 */
class CliGarbagePropertyTest {
  private static final List<String> ONE_SHOT =
      List.of("enqueue", "ls", "inspect", "stats", "requeue", "sweep", "purge");
  private static final List<String> LONG_RUNNING = List.of("worker", "serve", "demo");
  private static final List<String> OPTIONS = List.of(
      "--queue", "--priority", "--delay", "--max-attempts", "--key", "--liveness", "--shell", "--env",
      "--file", "--json", "--limit", "--status", "--failed", "--completed-before", "--concurrency",
      "--visibility", "--extend-every", "--extension", "--kill-grace", "--sweep-every",
      "--health-port", "--host", "--port", "--watchdog", "--timeout", "--help", "-h", "--version",
      "-V", "--verbose", "--", "-", "--bogus", "-x", "---", "--queue=", "--priority=7",
      "--delay=-5s", "--max-attempts=0");

  private static final Map<String, List<String>> OWN_OPTIONS = Map.of(
      "enqueue", List.of("--queue", "--priority", "--delay", "--max-attempts", "--key", "--liveness",
          "--shell", "--env", "--file", "--json", "--"),
      "ls", List.of("--queue", "--status", "--limit", "--json"),
      "inspect", List.of("--json", "1", "999"),
      "stats", List.of("--json"),
      "requeue", List.of("--failed", "--queue", "1", "999"),
      "sweep", List.of("--json"),
      "purge", List.of("--completed-before"));

  private static Path dir;
  private static Path store;
  private static int runs;
  private static final Map<Integer, Integer> exitCodes = new TreeMap<>();

  @BeforeContainer
  static void createStore() throws IOException {
    dir = Files.createTempDirectory("tether-cli-garbage");
    store = dir.resolve("store.db");
    Files.writeString(dir.resolve("commands.txt"), "echo one\n# comment\necho 'two three'\n");
    Files.writeString(dir.resolve("bad-commands.txt"), "echo 'unclosed\n");
    Files.writeString(dir.resolve("empty.txt"), "");
    Files.write(dir.resolve("binary.txt"), new byte[] {(byte) 0xff, (byte) 0xfe, 0, 1, '\n'});
    for (String cmd : new String[] {"echo a", "echo b"}) {
      Run r = tether(new String[] {"enqueue", "--db", store.toString(), "--shell", "--", cmd});
      assertThat(r.code).as(r.err).isZero();
    }
  }

  @AfterContainer
  static void deleteStore() throws IOException {
    System.out.println("CliGarbagePropertyTest: " + runs + " runs, exit codes (code=count): " + exitCodes);
    try (Stream<Path> s = Files.walk(dir)) {
      s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }

  /** {@code cliErr}: the CLI's error writer; {@code err}: that and the process's stderr (logs). */
  record Run(int code, String out, String err, String cliErr) {}

  /** Runs the CLI in-process, capturing its writers and the process's standard error (logs). */
  private static synchronized Run tether(String[] args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    ByteArrayOutputStream systemErr = new ByteArrayOutputStream();
    PrintStream oldErr = System.err;
    System.setErr(new PrintStream(systemErr, true, StandardCharsets.UTF_8));
    int code;
    try {
      code = TetherCli.execute(args, new PrintWriter(out, true), new PrintWriter(err, true));
    } finally {
      System.setErr(oldErr);
    }
    return new Run(code, out.toString(), err + systemErr.toString(StandardCharsets.UTF_8), err.toString());
  }

  @Property(tries = 400)
  void garbageArgvEndsWithACleanExitCodeNoStackTraceAndNoWriteWhenRefused(
      @ForAll("argv") List<String> argv) throws Exception {
    String[] args = argv.toArray(new String[0]);
    String before = snapshot();
    Run r;
    try {
      r = tether(args);
    } catch (Throwable t) {
      throw new AssertionError("uncaught " + t + " for argv " + show(argv), t);
    }
    runs++;
    exitCodes.merge(r.code, 1, Integer::sum);
    if (System.getenv("GARBAGE_DEBUG") != null) {
      System.out.println(r.code + " " + show(argv) + " :: " + escape(r.err.strip()));
    }
    assertThat(r.code).as("exit code for %s; stderr: %s", show(argv), r.err).isIn(0, 1, 2);
    if (!argv.contains("--verbose")) {
      assertThat(r.err).as("stderr for %s", show(argv))
          .doesNotContain("\tat ").doesNotContain("Caused by").doesNotContain("Exception");
    }
    if (r.code != 0) {
      assertThat(snapshot()).as("store after %s (exit %d, stderr %s)", show(argv), r.code, r.err)
          .isEqualTo(before);
      assertThat(r.err.strip()).as("an error message for %s", show(argv)).isNotEmpty();
      if (!argv.contains("--verbose")) {
        assertThat(r.cliErr.strip().lines().count()).as("one error line for %s: %s", show(argv),
            escape(r.cliErr)).isEqualTo(1);
      }
    }
    if (!argv.contains("--verbose")) {
      assertThat(r.cliErr.replace("\n", "").chars().noneMatch(ch -> ch < 0x20 || ch == 0x7f))
          .as("no control characters on stderr for %s: %s", show(argv), escape(r.cliErr)).isTrue();
    }
  }

  private static String show(List<String> argv) {
    StringBuilder b = new StringBuilder("[");
    for (String a : argv) {
      if (b.length() > 1) {
        b.append(", ");
      }
      String s = a.length() > 60 ? a.substring(0, 60) + "...(" + a.length() + " chars)" : a;
      b.append('"').append(escape(s)).append('"');
    }
    return b.append(']').toString();
  }

  /** {@code s} with control and other invisible characters as {@code \\uXXXX}. */
  private static String escape(String s) {
    StringBuilder b = new StringBuilder();
    s.codePoints().forEach(cp -> {
      if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) || Character.getType(cp) == Character.FORMAT
          || Character.getType(cp) == Character.SURROGATE || Character.getType(cp) == Character.UNASSIGNED
          || Character.getType(cp) == Character.LINE_SEPARATOR
          || Character.getType(cp) == Character.PARAGRAPH_SEPARATOR) {
        for (char ch : Character.toChars(cp)) {
          b.append(String.format("\\u%04x", (int) ch));
        }
      } else {
        b.appendCodePoint(cp);
      }
    });
    return b.toString();
  }

  /** Every row of the store's tables, as text (empty before the store exists). */
  private static String snapshot() throws SQLException {
    if (!Files.exists(store)) {
      return "";
    }
    StringBuilder b = new StringBuilder();
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + store);
        Statement st = c.createStatement()) {
      List<String> tables = new ArrayList<>();
      try (ResultSet rs = st.executeQuery(
          "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")) {
        while (rs.next()) {
          tables.add(rs.getString(1));
        }
      }
      for (String t : tables) {
        b.append("table ").append(t).append('\n');
        try (ResultSet rs = st.executeQuery("SELECT * FROM \"" + t + "\" ORDER BY rowid")) {
          ResultSetMetaData md = rs.getMetaData();
          while (rs.next()) {
            for (int i = 1; i <= md.getColumnCount(); i++) {
              b.append(rs.getString(i)).append('|');
            }
            b.append('\n');
          }
        }
      }
    }
    return b.toString();
  }

  @Provide
  Arbitrary<List<String>> argv() {
    Arbitrary<String> subcommand = Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(10, Arbitraries.of(ONE_SHOT)),
        net.jqwik.api.Tuple.of(2, Arbitraries.of(LONG_RUNNING)),
        net.jqwik.api.Tuple.of(1, Arbitraries.of("help", "", " ", "--help", "--version", "bogus")),
        net.jqwik.api.Tuple.of(1, randomString()));
    return subcommand.flatMap(sub -> rest(sub).map(tokens -> {
      List<String> a = new ArrayList<>();
      a.add(sub);
      if (ONE_SHOT.contains(sub)) {
        a.add("--db");
        a.add(store.toString());
      } else if (LONG_RUNNING.contains(sub)) {
        a.add("--no-such-flag-in-this-test");
      }
      a.addAll(tokens);
      return a;
    }));
  }

  /** Options (and for inspect and requeue, ids) of {@code sub} itself half the time, else of any command. */
  private Arbitrary<List<String>> rest(String sub) {
    List<String> own = OWN_OPTIONS.getOrDefault(sub, OPTIONS);
    Arbitrary<String> option = Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(1, Arbitraries.of(own)), net.jqwik.api.Tuple.of(1, Arbitraries.of(OPTIONS)));
    // segments: an option and a value, a lone option or flag, a lone value (positional)
    Arbitrary<List<String>> segment = Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(5, net.jqwik.api.Combinators.combine(option, value())
            .as((o, v) -> List.of(o, v))),
        net.jqwik.api.Tuple.of(2, option.map(List::of)),
        net.jqwik.api.Tuple.of(3, value().map(List::of)));
    Arbitrary<List<String>> garbage = segment.list().ofMaxSize(3).map(l -> {
      List<String> flat = new ArrayList<>();
      l.forEach(flat::addAll);
      return flat;
    });
    // a quarter of the runs: one token of the command's own, so that valid runs happen too
    return Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(3, garbage),
        net.jqwik.api.Tuple.of(1, Arbitraries.of(own).map(List::of)));
  }

  private Arbitrary<String> value() {
    return Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(2, Arbitraries.of(
            "", " ", "0", "1", "2", "-1", "999", "2147483648", "-2147483649",
            "99999999999999999999999999", "1e9", "0x10", "NaN", "1.5", "abc")),
        net.jqwik.api.Tuple.of(2, Arbitraries.of(
            "30s", "5m", "1h", "PT1M", "0s", "-5s", "1y", "s", "1.5s", "999999999999999h",
            "PT-1S", "P1D", "10ms", "9223372036854775807s", "1 s")),
        net.jqwik.api.Tuple.of(2, Arbitraries.of(
            "default", "builds", "a.b_c:d-e", "-q", ".q", "q q", "q;DROP TABLE tether_work_items", "日本",
            "é", "q\nq", "x".repeat(129), "pending", "failed", "completed", "in_progress",
            "process", "output", "A=1", "=1", "A", "PATH=/tmp")),
        net.jqwik.api.Tuple.of(1, Arbitraries.of(
            dir.resolve("commands.txt").toString(), dir.resolve("bad-commands.txt").toString(),
            dir.resolve("empty.txt").toString(), dir.resolve("binary.txt").toString(),
            dir.resolve("missing.txt").toString(), dir.toString(),
            "@" + dir.resolve("commands.txt"), "@" + dir.resolve("missing.txt"), "@", "@@x")),
        net.jqwik.api.Tuple.of(1, Arbitraries.of("x".repeat(10_000), "\u00e9".repeat(5_000),
            "--" + "q".repeat(5_000), "9".repeat(5_000))),
        net.jqwik.api.Tuple.of(3, randomString()));
  }

  /** Random NUL-free strings from any part of Unicode, including control characters. */
  private static Arbitrary<String> randomString() {
    return Arbitraries.strings().all().excludeChars('\0').ofMaxLength(40);
  }
}
