package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tether.cli.internal.Json;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The commands run in-process: exit codes, one-line errors, --json shapes, nothing changed on bad input. */
class CliTest {
  @TempDir Path dir;

  record Run(int code, String out, String err) {
    JsonNode json() throws Exception {
      return Json.MAPPER.readTree(out);
    }
  }

  private Run tether(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = TetherCli.execute(args, new PrintWriter(out, true), new PrintWriter(err, true));
    return new Run(code, out.toString(), err.toString());
  }

  private String db() {
    return dir.resolve("t.db").toString();
  }

  private Run withDb(String cmd, String... rest) {
    List<String> a = new ArrayList<>();
    a.add(cmd);
    a.add("--db");
    a.add(db());
    a.addAll(Arrays.asList(rest));
    return tether(a.toArray(new String[0]));
  }

  private static void assertOneLineError(Run r, int code, String contains) {
    assertThat(r.code()).as("exit code, stderr: %s", r.err()).isEqualTo(code);
    assertThat(r.err().strip()).doesNotContain("\n").contains(contains);
    assertThat(r.err()).doesNotContain("\tat ").doesNotContain("Exception");
  }

  @Test
  void enqueuePrintsTheNewIdAndLsShowsIt() throws Exception {
    Run e = withDb("enqueue", "--queue", "builds", "--priority", "5", "--", "echo", "hello world");
    assertThat(e.code()).isZero();
    assertThat(e.out().strip()).isEqualTo("1");
    Run ls = withDb("ls", "--json");
    assertThat(ls.code()).isZero();
    JsonNode a = ls.json();
    assertThat(a.isArray()).isTrue();
    assertThat(a).hasSize(1);
    JsonNode item = a.get(0);
    assertThat(item.get("id").asLong()).isEqualTo(1);
    assertThat(item.get("queue").asText()).isEqualTo("builds");
    assertThat(item.get("status").asText()).isEqualTo("pending");
    assertThat(item.get("priority").asInt()).isEqualTo(5);
    assertThat(item.get("delivery_count").asInt()).isZero();
    assertThat(item.get("max_attempts").asInt()).isEqualTo(3);
    assertThat(item.get("command").asText()).isEqualTo("echo 'hello world'");
    assertThat(item.has("lease_expires_at")).isTrue();
    assertThat(item.has("error")).isTrue();
  }

  @Test
  void aWorkersPoolSizeIsTheStoresAndOutOfRangeIsAUsageError() {
    assertOneLineError(withDb("worker", "--pool-size", "0"), 2, "--pool-size must be 1..1000, was 0");
    assertOneLineError(withDb("worker", "--pool-size", "1001"), 2, "--pool-size must be 1..1000");
    StoreOptions options = new StoreOptions();
    options.db = db();
    try (dev.tether.jdbc.TetherStore store = options.open(true, 3)) {
      assertThat(store.config().maximumPoolSize()).isEqualTo(3);
    }
    try (dev.tether.jdbc.TetherStore store = options.open(true)) {
      assertThat(store.config().maximumPoolSize()).as("the engine's default").isZero();
    }
  }

  @Test
  void lsFiltersByQueueAndStatusAndHumanOutputIsATable() {
    withDb("enqueue", "--queue", "a", "--", "true");
    withDb("enqueue", "--queue", "b", "--", "false");
    Run ls = withDb("ls", "--queue", "b");
    assertThat(ls.code()).isZero();
    assertThat(ls.out()).startsWith("ID").contains("false").doesNotContain("true");
    assertThat(ls.out()).doesNotContain("\u001b[");
    assertThat(withDb("ls", "--status", "completed").out()).contains("(no items)");
  }

  @Test
  void enqueueFileSplitsLinesWithShellQuotingInOneBatch() throws Exception {
    Path f = dir.resolve("jobs.txt");
    Files.writeString(f, "# comment\necho 'a b' c\n\nprintf \"%s\\n\" x\n", StandardCharsets.UTF_8);
    Run e = withDb("enqueue", "--file", f.toString(), "--json");
    assertThat(e.code()).as(e.err()).isZero();
    assertThat(e.json().get("ids")).hasSize(2);
    Run inspect = withDb("inspect", e.json().get("ids").get(0).asText(), "--json");
    assertThat(inspect.json().get("spec").get("argv").toString()).isEqualTo("[\"echo\",\"a b\",\"c\"]");
    assertThat(inspect.json().get("spec").get("shell").asBoolean()).isFalse();
  }

  @Test
  void badLineInFileEnqueuesNothing() throws Exception {
    Path f = dir.resolve("jobs.txt");
    Files.writeString(f, "echo ok\necho 'unterminated\n", StandardCharsets.UTF_8);
    withDb("enqueue", "--", "true"); // create the store
    Run e = withDb("enqueue", "--file", f.toString());
    assertOneLineError(e, 2, "line 2: unterminated single quote");
    assertThat(withDb("ls", "--json").json()).hasSize(1);
  }

  @Test
  void inspectJsonHasTheItemAttemptsCheckpointsAndResult() throws Exception {
    withDb("enqueue", "--liveness", "process", "--env", "A=1", "--", "sleep", "1");
    JsonNode o = withDb("inspect", "1", "--json").json();
    assertThat(o.get("id").asLong()).isEqualTo(1);
    assertThat(o.get("status").asText()).isEqualTo("pending");
    assertThat(o.get("spec").get("liveness").asText()).isEqualTo("process");
    assertThat(o.get("spec").get("env").get("A").asText()).isEqualTo("1");
    assertThat(o.get("deliveries").isArray()).isTrue();
    assertThat(o.get("attempts").isInt()).isTrue();
    assertThat(o.get("checkpoints").isArray()).isTrue();
    assertThat(o.has("result")).isTrue();
    Run human = withDb("inspect", "1");
    assertThat(human.out()).contains("status:").contains("sleep 1");
  }

  @Test
  void statsJsonHasTotalsAtTheTopAndPerQueueDetail() throws Exception {
    withDb("enqueue", "--queue", "a", "--", "true");
    withDb("enqueue", "--queue", "a", "--", "true");
    withDb("enqueue", "--queue", "b", "--", "true");
    JsonNode o = withDb("stats", "--json").json();
    assertThat(o.get("pending").asLong()).isEqualTo(3);
    assertThat(o.get("in_progress").asLong()).isZero();
    assertThat(o.get("completed").asLong()).isZero();
    assertThat(o.get("failed").asLong()).isZero();
    assertThat(o.get("queues").get("a").get("pending").asLong()).isEqualTo(2);
    assertThat(o.get("queues").get("b").get("pending").asLong()).isEqualTo(1);
    assertThat(o.get("in_flight").isArray()).isTrue();
    assertThat(withDb("stats").out()).contains("(all)");
  }

  @Test
  void idempotencyKeyEnqueuesOnce() {
    String first = withDb("enqueue", "--key", "k1", "--", "true").out();
    String second = withDb("enqueue", "--key", "k1", "--", "true").out();
    assertThat(second).isEqualTo(first);
  }

  @Test
  void cancelEndsAPendingItemCancelledAndRefusesUnknownOrEndedItemsWithOneLine() throws Exception {
    withDb("enqueue", "--", "true");
    Run c = withDb("cancel", "1", "--reason", "not needed");
    assertThat(c.code()).as(c.err()).isZero();
    assertThat(c.out()).contains("cancelled item 1");
    JsonNode item = withDb("inspect", "1", "--json").json();
    assertThat(item.get("status").asText()).isEqualTo("cancelled");
    assertThat(item.get("error").asText()).isEqualTo("not needed");
    assertOneLineError(withDb("cancel", "1"), 1, "item 1 is cancelled; only pending or in-progress items can be cancelled");
    assertOneLineError(withDb("cancel", "99"), 1, "no item 99");
    assertOneLineError(withDb("cancel", "1", "--reason", " "), 2, "--reason is empty");
    assertThat(withDb("requeue", "1").code()).isZero();
  }

  @Test
  void checkpointAndBeatOutsideAWorkersCommandAreUsageErrors() {
    assertThat(System.getenv("TETHER_LEASE")).as("the test JVM runs outside a worker").isNull();
    withDb("enqueue", "--", "true");
    assertOneLineError(withDb("checkpoint", "step 1"), 2, "TETHER_LEASE is not set");
    assertOneLineError(withDb("beat"), 2, "TETHER_LEASE is not set");
    assertThat(withDb("inspect", "1", "--json").out()).contains("\"checkpoint\":null");
  }

  @Test
  void requeueOfAPendingItemFailsWithOneLine() {
    withDb("enqueue", "--", "true");
    assertOneLineError(withDb("requeue", "1"), 1, "item 1 is pending; only failed or cancelled items can be requeued");
    assertOneLineError(withDb("requeue", "99"), 1, "no item 99");
    assertThat(withDb("requeue", "--failed").out()).contains("requeued 0 failed items");
  }

  @Test
  void sweepAndPurgeRunOnAStore() {
    withDb("enqueue", "--", "true");
    Run s = withDb("sweep");
    assertThat(s.code()).isZero();
    assertThat(s.out()).contains("expired found: 0");
    Run p = withDb("purge", "--completed-before", "1h");
    assertThat(p.code()).isZero();
    assertThat(p.out()).contains("purged 0");
  }

  @Test
  void unknownOptionIsAUsageError() {
    assertOneLineError(withDb("ls", "--frobnicate"), 2, "Unknown option: '--frobnicate'");
  }

  @Test
  void badDurationIsAUsageError() {
    Run r = withDb("enqueue", "--delay", "soon", "--", "true");
    assertOneLineError(r, 2, "invalid duration 'soon'");
    assertThat(Files.exists(dir.resolve("t.db"))).isFalse();
  }

  @Test
  void emptyCommandIsAUsageError() {
    assertOneLineError(withDb("enqueue"), 2, "empty command");
    assertOneLineError(withDb("enqueue", "--", ""), 2, "empty command");
    assertThat(Files.exists(dir.resolve("t.db"))).isFalse();
  }

  @Test
  void oddQueueNameIsAUsageError() {
    assertOneLineError(withDb("enqueue", "--queue", "a b;drop", "--", "true"), 2, "invalid queue name 'a b;drop'");
    assertOneLineError(withDb("worker", "--queue", "../x"), 2, "invalid queue name");
  }

  @Test
  void nonexistentItemIsAFailure() {
    withDb("enqueue", "--", "true");
    assertOneLineError(withDb("inspect", "42"), 1, "no item 42");
  }

  @Test
  void missingStoreForAReadCommandIsAFailureAndCreatesNothing() {
    assertOneLineError(withDb("ls"), 1, "no Tether store at");
    assertThat(Files.exists(dir.resolve("t.db"))).isFalse();
  }

  @Test
  void unopenableDbIsAFailure() {
    Run r = tether("enqueue", "--db", dir.resolve("no/such/dir/x.db").toString(), "--", "true");
    assertOneLineError(r, 1, "does not exist");
  }

  @Test
  void emptyDbIsAUsageErrorAndNotTheDefaultFile() {
    for (String empty : new String[] {"", "  "}) {
      assertOneLineError(tether("ls", "--db", empty), 2, "--db is empty");
      assertOneLineError(tether("enqueue", "--db", empty, "--", "true"), 2, "--db is empty");
      assertOneLineError(tether("worker", "--db=" + empty), 2, "--db is empty");
    }
    assertThat(Path.of(StoreOptions.DEFAULT_DB)).as("the default store file").doesNotExist();
  }

  @Test
  void passwordInDbIsMaskedInErrors() {
    Run r = tether("ls", "--db", "jdbc:postgresql://127.0.0.1:1/x?user=u&password=s3cret");
    assertOneLineError(r, 1, "cannot open --db jdbc:postgresql://127.0.0.1:1/x?user=u&password=***:");
    assertThat(r.err()).doesNotContain("s3cret");
    Run info = tether("ls", "--db", "jdbc:postgresql://u:s3cret@127.0.0.1:1/x");
    assertOneLineError(info, 1, "cannot open --db jdbc:postgresql://u:***@127.0.0.1:1/x:");
    assertThat(info.err()).doesNotContain("s3cret");
  }

  @Test
  void aSchemaIsRefusedOnSqliteAndMustBeAPlainIdentifier() {
    assertOneLineError(withDb("enqueue", "--queue", "q", "--schema", "jobs", "--", "true"), 1,
        "SQLite has no schemas");
    assertOneLineError(withDb("ls", "--schema", "jobs;drop"), 2, "--schema: schema must be an unquoted SQL identifier");
  }

  @Test
  void passwordFileWithAPasswordInTheUrlOrWithSqliteIsAUsageError() throws Exception {
    Path pw = dir.resolve("pw");
    Files.writeString(pw, "s3cret");
    Run both = tether("ls", "--db", "jdbc:postgresql://127.0.0.1:1/x?password=0th3r-pw",
        "--db-password-file", pw.toString());
    assertOneLineError(both, 2, "--db-password-file gives another: keep one");
    assertThat(both.err()).doesNotContain("0th3r-pw");
    assertOneLineError(withDb("ls", "--db-password-file", pw.toString()), 2, "for a PostgreSQL --db");
    assertOneLineError(tether("ls", "--db", "jdbc:postgresql://127.0.0.1:1/x", "--db-password-file",
        dir.resolve("missing").toString()), 1, "cannot read --db-password-file");
  }

  @Test
  void unsupportedUrlIsAFailureNamingTheAcceptedForms() {
    assertOneLineError(tether("ls", "--db", "mysql://localhost/x"), 1, "unsupported --db 'mysql://localhost/x'");
  }

  @Test
  void corruptFileIsRefusedAndLeftUnchanged() throws Exception {
    Path f = dir.resolve("t.db");
    byte[] junk = "this is not a database, just some text that is long enough".repeat(100).getBytes(StandardCharsets.UTF_8);
    Files.write(f, junk);
    assertOneLineError(withDb("enqueue", "--", "true"), 1, "is not a usable SQLite database");
    assertOneLineError(withDb("ls"), 1, "is not a usable SQLite database");
    assertThat(Files.readAllBytes(f)).isEqualTo(junk);
  }

  @Test
  void foreignSqliteDatabaseIsRefusedAndLeftUnchanged() throws Exception {
    Path f = dir.resolve("t.db");
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + f);
        Statement st = c.createStatement()) {
      st.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)");
    }
    byte[] before = Files.readAllBytes(f);
    assertOneLineError(withDb("enqueue", "--", "true"), 1, "not a Tether store");
    assertThat(Files.readAllBytes(f)).isEqualTo(before);
  }

  @Test
  void databaseNewerThanTheProgramIsRefused() throws Exception {
    withDb("enqueue", "--", "true");
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db());
        Statement st = c.createStatement()) {
      st.execute("INSERT INTO tether_schema_version (version, description, applied_at_millis) VALUES (99, 'future', 0)");
    }
    Run r = withDb("ls");
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err().strip()).doesNotContain("\n").contains("99");
  }

  @Test
  void verboseAddsTheStackTrace() {
    Run r = withDb("inspect", "42", "--verbose");
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err()).contains("\tat ");
  }

  @Test
  void noSubcommandIsAUsageError() {
    Run r = tether();
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).contains("missing command");
  }

  @Test
  void everyCommandHasHelp() {
    for (String c : List.of("enqueue", "worker", "ls", "inspect", "stats", "requeue", "cancel", "checkpoint", "beat", "sweep", "purge", "serve", "demo")) {
      Run r = tether(c, "--help");
      assertThat(r.code()).as(c).isZero();
      assertThat(r.out()).as(c).contains("Usage: tether " + c);
    }
  }

  @Test
  void badWorkerTimeoutsAreUsageErrorsNamingTheRule() {
    Run r = withDb("worker", "--extend-every", "1m", "--extension", "1m");
    assertOneLineError(r, 2, "--extend-every (60s) must be less than half of --extension (60s)");
    assertOneLineError(withDb("worker", "--visibility", "1m", "--extension", "1m"), 2,
        "--extension (60s) must be less than --visibility (60s)");
    // the watchdog's rule: it came from the loop group once the store was open, with its list
    // of rules cut from the one line printed
    assertOneLineError(withDb("worker", "--visibility", "5s", "--extension", "4s", "--extend-every",
        "500ms", "--watchdog", "6s"), 2, "--visibility (5s) must be longer than --watchdog (6s)");
    // limits that the loop's and the sweep's own builders gave, in their names, once the store was open
    assertOneLineError(withDb("worker", "--visibility", "13h"), 2,
        "--visibility must be at most 43200s, was 46800s");
    assertOneLineError(withDb("worker", "--sweep-every", "0s"), 2, "--sweep-every must be > 0, was 0ms");
    assertThat(Files.exists(dir.resolve("t.db"))).isFalse();
  }

  @Test
  void argumentsStartingWithAtAreKeptVerbatimNotExpandedFromFiles() throws Exception {
    // curl -d @file, gcc @options: an @ argument belongs to the command, not to tether
    Path data = dir.resolve("data.txt");
    Files.writeString(data, "secret contents\n");
    Run e = withDb("enqueue", "--json", "--", "curl", "-d", "@" + data, "http://example.invalid/");
    assertThat(e.code()).as(e.err()).isZero();
    JsonNode item = withDb("inspect", e.json().get("ids").get(0).asText(), "--json").json();
    assertThat(item.get("command").asText()).contains("@" + data).doesNotContain("secret");
    Run unknown = tether("@" + data);
    assertThat(unknown.code()).isEqualTo(2);
    assertThat(unknown.err()).doesNotContain("secret");
  }
}
