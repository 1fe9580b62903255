package dev.tether.cli;

import dev.tether.cli.internal.CommandResult;
import dev.tether.cli.internal.CommandSpec;
import dev.tether.cli.internal.Dashboard;
import dev.tether.cli.internal.Durations;
import dev.tether.cli.internal.QueueTotals;
import dev.tether.cli.internal.Table;
import dev.tether.cli.internal.Worker;
import dev.tether.cli.internal.WorkerEvents;
import dev.tether.cli.internal.WorkerMetrics;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tether demo}: enqueues a handful of realistic jobs on a fresh SQLite store, runs a worker
 * group and narrates what happens (leases extended, a stall detected and redelivered, a retry, a
 * dead letter), then prints a summary table. Ends by itself in well under a minute.
 */
@Command(
    name = "demo",
    mixinStandardHelpOptions = true,
    description = {
      "A narrated tour on a fresh SQLite store: chatty jobs keep their leases, a silent job loses"
          + " its lease and is redelivered, a flaky job is retried, a poison job is dead-lettered.",
      "Ends by itself in under a minute with a summary table."
    })
final class DemoCommand implements Callable<Integer> {
  @Option(names = "--dir", paramLabel = "DIR", description = "Where to create the demo store (default: a new temporary directory).")
  Path dir;

  @Option(names = "--port", defaultValue = "0", description = "Dashboard port (default: any free port).")
  int port;

  @Option(names = "--timeout", defaultValue = "55s", paramLabel = "DURATION", description = "Give up after this long (default: ${DEFAULT-VALUE}).")
  Duration timeout;

  @Option(names = "--verbose", description = "Log more.")
  boolean verbose;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  private PrintWriter out;
  private long startNanos;
  private boolean colour;
  private final Map<String, String> labels = new ConcurrentHashMap<>();
  private final Map<String, Integer> maxAttempts = new ConcurrentHashMap<>();
  private final Map<String, String> liveness = new ConcurrentHashMap<>();
  private final Set<String> extendedOnce = ConcurrentHashMap.newKeySet();

  private record Job(String label, String script, String liveness, int maxAttempts, int priority) {}

  private static final List<Job> JOBS =
      List.of(
          new Job("build: compile 10 modules (chatty)",
              "for i in 1 2 3 4 5 6 7 8 9 10; do echo \"compiling module $i/10\"; sleep 0.7; done; echo BUILD OK",
              "output", 3, 5),
          new Job("train: 8 epochs (chatty)",
              "for e in 1 2 3 4 5 6 7 8; do echo \"epoch $e loss=0.$((90 - e * 9))\"; sleep 0.9; done",
              "output", 3, 5),
          new Job("fetch: flaky upstream goes silent, then recovers",
              "if [ \"$TETHER_DELIVERY\" -ge 2 ]; then echo 'reconnected; fetched 1200 rows'; exit 0; fi;"
                  + " echo 'connecting to upstream...'; sleep 60",
              "output", 3, 4),
          new Job("upload: fails once (HTTP 503), then succeeds",
              "if [ \"$TETHER_DELIVERY\" -lt 2 ]; then echo 'HTTP 503 Service Unavailable' >&2; exit 1; fi;"
                  + " echo 'uploaded artifact (2.3 MB)'",
              "output", 3, 3),
          new Job("parse: poison input, crashes every time",
              "echo 'parsing input.csv' ; echo 'fatal: malformed row 17' >&2; exit 2",
              "output", 3, 3),
          new Job("backup: silent but alive (--liveness process)",
              "sleep 6; echo 'backup complete'",
              "process", 3, 2),
          new Job("report: quick one",
              "echo 'report written to /tmp/report.txt'",
              "output", 3, 1));

  @Override
  public Integer call() throws Exception {
    out = spec.commandLine().getOut();
    colour = Terminal.colour();
    Path base = dir != null ? dir : Files.createTempDirectory("tether-demo-");
    Files.createDirectories(base);
    Path dbFile = base.resolve("demo-" + System.currentTimeMillis() + ".db");
    startNanos = System.nanoTime();
    say(bold("Tether demo") + " — a durable job runner where every chunk of output is proof of work.");
    say("store: " + dbFile + " (fresh SQLite file)");
    try (TetherStore store = TetherStore.open(dbFile.toString())) {
      LeaseManager lm = new LeaseManager(store, "tether-demo");
      QueueMonitor monitor = new QueueMonitor(store);
      for (Job j : JOBS) {
        CommandSpec s = new CommandSpec(List.of(j.script()), true, j.liveness(), Map.of());
        long id =
            lm.enqueue(
                NewWorkItem.builder("demo")
                    .input(s.toJson())
                    .maxAttempts(j.maxAttempts())
                    .priority(j.priority())
                    .build());
        labels.put(Long.toString(id), j.label());
        maxAttempts.put(Long.toString(id), j.maxAttempts());
        liveness.put(Long.toString(id), j.liveness());
        say("enqueued #" + id + "  " + j.label());
      }
      Worker.Config config =
          new Worker.Config("demo", 4, Duration.ofSeconds(4), Duration.ofSeconds(1),
              Duration.ofSeconds(3), Duration.ofSeconds(1), 4096, Duration.ofSeconds(2), null);
      WorkerMetrics metrics = new WorkerMetrics();
      Narrator narrator = new Narrator(metrics);
      Worker worker = new Worker(store, config, narrator,
          dev.tether.micrometer.TetherMetrics.builder().queues("demo").build(), null);
      say("starting a worker with 4 loops: lease 4s, extended by 3s at most every 1s while output flows");
      String token = Dashboard.tokenFromEnvOrRandom();
      // one process owns the demo's store: it exports the store's gauges too
      Dashboard dashboard = new Dashboard(store, token, worker, metrics, true);
      worker.start(new Worker.Health("127.0.0.1", port, dashboard.routes()), false);
      worker.healthAddress().ifPresent(a -> say("dashboard: "
          + bold(Dashboard.linkWithToken("http://127.0.0.1:" + a.getPort() + "/", token))
          + " (live while the demo runs; the link gives the page its token)"));
      long deadline = System.nanoTime() + timeout.toNanos();
      boolean finished = false;
      while (System.nanoTime() < deadline) {
        Thread.sleep(250);
        QueueTotals c = QueueTotals.of(monitor).stream().filter(q -> q.queue().equals("demo")).findFirst().orElse(null);
        if (c != null && c.pending() == 0 && c.inProgress() == 0) {
          finished = true;
          break;
        }
      }
      if (!finished) {
        say("time is up (" + Durations.human(timeout) + "); stopping the worker");
      }
      worker.stop(Duration.ofSeconds(5));
      summary(lm);
      // the name it was started by: ./tether from a clone (the script says so), else tether
      String prog = shellWord(System.getenv().getOrDefault("TETHER_PROG", "").isBlank() ? "tether"
          : System.getenv("TETHER_PROG"));
      String db = shellWord(dbFile.toString());
      say("explore: " + prog + " ls --db " + db + "   |   " + prog + " inspect 3 --db " + db);
    }
    out.flush();
    return TetherCli.EXIT_OK;
  }

  private void summary(LeaseManager lm) {
    out.println();
    say(bold("summary"));
    Table t = new Table("ID", "JOB", "STATUS", "ATTEMPTS", "OUTCOME");
    Map<String, Integer> totals = new LinkedHashMap<>();
    for (String id : labels.keySet().stream().sorted((a, b) -> Long.compare(Long.parseLong(a), Long.parseLong(b))).toList()) {
      WorkItem w = lm.find(Long.parseLong(id)).orElseThrow();
      String outcome;
      CommandResult r = w.output() == null ? null : CommandResult.fromJsonOrNull(w.outputAsString());
      if (r != null) {
        String last = r.stdoutTail().strip();
        int nl = last.lastIndexOf('\n');
        outcome = "exit 0: " + (nl < 0 ? last : last.substring(nl + 1));
      } else {
        outcome = w.errorMessage() == null ? "-" : CommandResult.firstLine(w.errorMessage());
      }
      String status = w.status().dbValue();
      totals.merge(status, 1, Integer::sum);
      t.row(id, labels.get(id), status, w.attempts() + "/" + w.maxAttempts(), outcome);
    }
    t.print(out, colour);
    out.println();
    say("totals: " + totals + "; took " + Durations.human(Duration.ofNanos(System.nanoTime() - startNanos)));
  }

  private String bold(String s) {
    return colour ? "\u001b[1m" + s + "\u001b[0m" : s;
  }

  private synchronized void say(String line) {
    double t = (System.nanoTime() - startNanos) / 1e9;
    out.println(String.format(Locale.ROOT, "[%5.1fs] ", t) + line);
    out.flush();
  }

  /** Turns worker events into narration. */
  private final class Narrator implements WorkerEvents {
    private final WorkerMetrics metrics;

    Narrator(WorkerMetrics metrics) {
      this.metrics = metrics;
    }

    private String name(String id) {
      return "#" + id + " " + labels.getOrDefault(id, "?").replaceAll(" \\(.*\\)$", "").replaceAll(",.*$", "");
    }

    @Override
    public void started(String itemId, int delivery, CommandSpec spec) {
      say(delivery == 1
          ? "▶ " + name(itemId) + ": started"
          : "↻ " + name(itemId) + ": redelivered, attempt " + delivery);
    }

    @Override
    public void extended(String itemId, Duration extension) {
      metrics.extended(itemId, extension);
      if (extendedOnce.add(itemId)) {
        String why =
            CommandSpec.LIVENESS_PROCESS.equals(liveness.get(itemId))
                ? "its process is alive (liveness: process)"
                : "its output proves it is working";
        say("  " + name(itemId) + ": lease extended by " + Durations.human(extension) + " — "
            + why + " (further extensions not shown)");
      }
    }

    @Override
    public void leaseLost(String itemId) {
      metrics.leaseLost(itemId);
      say("⚠ " + name(itemId) + ": stall detected — no output, lease expired; process tree killed,"
          + " the item will be redelivered");
    }

    @Override
    public void finished(String itemId, int delivery, CommandResult result, Duration took) {
      metrics.finished(itemId, delivery, result, took);
      if (result.succeeded()) {
        say("✔ " + name(itemId) + ": completed in " + Durations.human(took) + " (" + result.chunks() + " output chunks = beats)");
      } else if (delivery >= maxAttempts.getOrDefault(itemId, 3)) {
        say("✖ " + name(itemId) + ": " + result.failureSummary() + " — attempt " + delivery
            + " of " + maxAttempts.get(itemId) + ", dead-lettered (status failed)");
      } else {
        say("✖ " + name(itemId) + ": " + result.failureSummary() + " — retry scheduled with backoff");
      }
    }

    @Override
    public void handedBack(String itemId) {
      metrics.handedBack(itemId);
      say("⏏ " + name(itemId) + ": item handed back, not charged");
    }
  }

  /** {@code word} as one word pasted into a shell: quoted when it holds anything but a plain path. */
  static String shellWord(String word) {
    return word.matches("[A-Za-z0-9_./:=-]+") ? word : dev.tether.cli.internal.ChildAccess.quote(word);
  }
}
