package dev.tether.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tether.cli.internal.CommandSpec;
import dev.tether.cli.internal.Json;
import dev.tether.cli.internal.Reports;
import dev.tether.cli.internal.ShellWords;
import dev.tether.cli.internal.Stores;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code tether enqueue}: adds commands to a queue. */
@Command(
    name = "enqueue",
    mixinStandardHelpOptions = true,
    description = {
      "Enqueue a command (everything after --) or, with --file, one command per line.",
      "Lines are split into words with shell quoting rules but never run through a shell;"
          + " blank lines and lines starting with # are skipped.",
      "Prints the new item's id (one per line with --file)."
    })
final class EnqueueCommand implements Callable<Integer> {
  @Mixin StoreOptions store;

  @Option(names = "--queue", defaultValue = "default", description = "Queue (default: ${DEFAULT-VALUE}).")
  String queue;

  @Option(names = "--priority", defaultValue = "0", description = "Higher runs first (default: 0).")
  int priority;

  @Option(names = "--delay", paramLabel = "DURATION", description = "Run no earlier than this from now (30s, 5m, 1h, PT1M).")
  Duration delay;

  @Option(names = "--max-attempts", defaultValue = "3", description = "Total deliveries before the item fails (default: ${DEFAULT-VALUE}).")
  int maxAttempts;

  @Option(names = "--key", paramLabel = "IDEMPOTENCY_KEY", description = "Enqueue at most once per queue with this key (with --file: KEY:LINE).")
  String key;

  @Option(names = "--liveness", defaultValue = "output", paramLabel = "output|process",
      description = "output: only output proves work (default); process: the lease is renewed while the process is alive.")
  String liveness;

  @Option(names = "--shell", description = "Run the command through /bin/sh -c (words are joined with spaces).")
  boolean shell;

  @Option(names = "--env", paramLabel = "NAME=VALUE", description = "Add an environment variable (repeatable).")
  List<String> env = new ArrayList<>();

  @Option(names = "--file", paramLabel = "FILE", description = "Enqueue one command per line of FILE, in one batch.")
  Path file;

  @Option(names = "--json", description = "Print {\"ids\":[...]} instead of plain ids.")
  boolean json;

  @Parameters(paramLabel = "COMMAND", arity = "0..*", description = "The command and its arguments (after --).")
  List<String> command = new ArrayList<>();

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws IOException {
    PrintWriter out = spec.commandLine().getOut();
    Stores.checkQueue(queue);
    if (maxAttempts < 1 || maxAttempts > 1000) {
      throw new TetherCli.UsageException("--max-attempts must be 1..1000, was " + maxAttempts);
    }
    Map<String, String> envMap = new LinkedHashMap<>();
    for (String e : env) {
      int eq = e.indexOf('=');
      if (eq <= 0) {
        throw new TetherCli.UsageException("--env '" + e + "' is not NAME=VALUE");
      }
      envMap.put(e.substring(0, eq), e.substring(eq + 1));
    }
    checkUtf8("--env", env);
    if (key != null) {
      checkUtf8("--key", List.of(key));
    }
    List<CommandSpec> specs = new ArrayList<>();
    List<Integer> lineOf = new ArrayList<>();
    if (file != null) {
      if (!command.isEmpty()) {
        throw new TetherCli.UsageException("give either --file or a command, not both");
      }
      if (!Files.isReadable(file)) {
        throw new TetherCli.UsageException("cannot read --file " + file);
      }
      List<String> lines = readUtf8Lines(file);
      for (int i = 0; i < lines.size(); i++) {
        String line = lines.get(i).strip();
        if (line.isEmpty() || line.startsWith("#")) {
          continue;
        }
        try {
          specs.add(spec(shell ? List.of(line) : ShellWords.split(line), envMap));
          lineOf.add(i + 1);
        } catch (IllegalArgumentException e) {
          throw new TetherCli.UsageException(file + " line " + (i + 1) + ": " + e.getMessage());
        }
      }
      if (specs.isEmpty()) {
        throw new TetherCli.UsageException("--file " + file + " has no commands");
      }
    } else {
      if (command.isEmpty()) {
        throw new TetherCli.UsageException(
            "empty command: give one after --, e.g. tether enqueue -- echo hello");
      }
      checkUtf8("argument", command);
      specs.add(spec(shell ? List.of(String.join(" ", command)) : command, envMap));
    }
    for (int i = 0; i < specs.size(); i++) {
      try {
        CommandSpec.fromJson(specs.get(i).toJson()); // what the worker will read
      } catch (IllegalArgumentException e) {
        throw new TetherCli.UsageException(
            (file == null ? "" : file + " line " + lineOf.get(i) + ": ") + e.getMessage()
                + "; nothing was enqueued");
      }
    }
    List<NewWorkItem> items = new ArrayList<>();
    for (int i = 0; i < specs.size(); i++) {
      NewWorkItem.Builder b =
          NewWorkItem.builder(queue)
              .input(specs.get(i).toJson())
              .priority(priority)
              .maxAttempts(maxAttempts);
      if (delay != null) {
        b.delay(delay);
      }
      if (key != null) {
        b.idempotencyKey(file == null ? key : key + ":" + (i + 1));
      }
      items.add(b.build());
    }
    boolean progress = items.size() > 1 && !json;
    if (progress) {
      spec.commandLine().getErr().println("enqueueing " + items.size() + " commands in one batch...");
    }
    List<Long> ids;
    try (TetherStore s = store.open(true)) {
      LeaseManager lm = new LeaseManager(s, "tether-cli:" + ProcessHandle.current().pid());
      ids = items.size() == 1 ? List.of(lm.enqueue(items.get(0))) : lm.enqueueAll(items);
      if (key != null) {
        checkKeys(lm, items, ids);
      }
    }
    if (json) {
      ObjectNode o = Json.MAPPER.createObjectNode();
      ArrayNode a = o.putArray("ids");
      ids.forEach(a::add);
      out.println(Json.MAPPER.writeValueAsString(o));
    } else {
      for (long id : ids) {
        out.println(id);
      }
    }
    if (progress) {
      spec.commandLine().getErr().println("enqueued " + ids.size() + " commands on queue '" + queue + "'");
    }
    out.flush();
    return TetherCli.EXIT_OK;
  }

  private CommandSpec spec(List<String> argv, Map<String, String> envMap) {
    return new CommandSpec(argv, shell, liveness, envMap);
  }

  /**
   * An enqueue with a key returns the existing item's id when the key is taken: that is only
   * "at most once" when the existing item runs the same command. Otherwise it is a mistake the
   * user must hear about.
   */
  private void checkKeys(LeaseManager lm, List<NewWorkItem> items, List<Long> ids) {
    for (int i = 0; i < items.size(); i++) {
      long id = ids.get(i);
      byte[] wanted = items.get(i).input();
      WorkItem existing = lm.find(id).orElse(null);
      if (existing != null && !java.util.Arrays.equals(existing.input(), wanted)) {
        throw new TetherCli.FailureException("--key '" + items.get(i).idempotencyKey()
            + "' on queue '" + queue + "' is already item " + id + " with another command: "
            + Reports.commandOf(Reports.inputOf(existing)) + "; nothing was enqueued"
            + (items.size() > 1 ? " for that line" : ""));
      }
    }
  }

  /**
   * Refuses text that did not decode as UTF-8: the JVM replaces such bytes in arguments with
   * U+FFFD, and storing that would silently change the command.
   */
  private static void checkUtf8(String what, List<String> values) {
    for (int i = 0; i < values.size(); i++) {
      if (values.get(i).indexOf('\uFFFD') >= 0) {
        String encoding = System.getProperty("sun.jnu.encoding", "UTF-8");
        throw new TetherCli.UsageException(what + " " + (i + 1) + " is not valid UTF-8 (or holds"
            + " U+FFFD): Tether stores commands as UTF-8 text and would change it; "
            + (encoding.replace("-", "").equalsIgnoreCase("UTF8")
                ? "pass such bytes in a file the command reads, or escape them for the shell with"
                    + " --shell"
                : "this process reads its arguments as " + encoding + " (the locale): run it with"
                    + " a UTF-8 locale, for example LC_ALL=C.UTF-8"));
      }
    }
  }

  /** Reads a file's lines as strict UTF-8, naming the line and byte of the first bad sequence. */
  private static List<String> readUtf8Lines(Path file) throws IOException {
    byte[] bytes = Files.readAllBytes(file);
    java.nio.charset.CharsetDecoder d = StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT)
        .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT);
    java.nio.ByteBuffer in = java.nio.ByteBuffer.wrap(bytes);
    java.nio.CharBuffer out = java.nio.CharBuffer.allocate(bytes.length);
    java.nio.charset.CoderResult r = d.decode(in, out, true);
    if (r.isError()) {
      int at = in.position();
      int line = 1;
      for (int i = 0; i < at; i++) {
        if (bytes[i] == '\n') {
          line++;
        }
      }
      throw new TetherCli.UsageException("--file " + file + " is not valid UTF-8: line " + line
          + " (byte " + (at + 1) + " of the file); save it as UTF-8");
    }
    d.flush(out);
    out.flip();
    return List.of(out.toString().split("\r?\n", -1));
  }
}
