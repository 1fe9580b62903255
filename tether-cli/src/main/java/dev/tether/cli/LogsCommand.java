package dev.tether.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tether.cli.internal.Durations;
import dev.tether.cli.internal.Reports;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code tether logs ID [--follow]}: an item's latest output, its standard output tail on standard
 * output and its standard error tail on standard error. A running item's output is what its worker
 * carried on its last lease extension; a finished item's is what its last delivery ended with.
 * With {@code --follow}, it polls the store and prints what arrives, until the item finishes.
 */
@Command(
    name = "logs",
    mixinStandardHelpOptions = true,
    description = {
      "Print an item's latest output: the tail of its standard output on stdout and of its"
          + " standard error on stderr, from its current (or last) delivery. A running item's"
          + " output is as of its worker's last lease extension.",
      "--follow keeps printing output as it arrives until the item finishes (completed, failed"
          + " or cancelled), across redeliveries."
    })
final class LogsCommand implements Callable<Integer> {
  @Mixin StoreOptions store;

  @Parameters(paramLabel = "ID", description = "The item id.")
  long id;

  @Option(names = {"-f", "--follow"}, description = "Keep printing output until the item finishes.")
  boolean follow;

  @Option(
      names = "--interval",
      defaultValue = "1s",
      paramLabel = "DURATION",
      description = "How often --follow reads the store (default: ${DEFAULT-VALUE}).")
  String interval;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    Duration every = parseInterval();
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    try (TetherStore s = store.open(false)) {
      LeaseManager leases = new LeaseManager(s, "tether-cli:" + ProcessHandle.current().pid());
      QueueMonitor monitor = new QueueMonitor(s);
      Follower f = new Follower(out, err);
      while (true) {
        Optional<WorkItem> item = leases.find(id);
        if (item.isEmpty()) {
          throw new TetherCli.FailureException(
              "no item " + id + " in " + store.display() + "; list items with 'tether ls'");
        }
        ObjectNode o = Reports.item(item.get(), monitor.now());
        boolean finished = f.show(o);
        if (!follow || finished) {
          return TetherCli.EXIT_OK;
        }
        Thread.sleep(every.toMillis());
      }
    }
  }

  private Duration parseInterval() {
    Duration d;
    try {
      d = Durations.parse(interval);
    } catch (IllegalArgumentException e) {
      throw new TetherCli.UsageException("--interval: " + e.getMessage());
    }
    if (d.compareTo(Duration.ofMillis(100)) < 0) {
      throw new TetherCli.UsageException("--interval must be at least 100ms, was " + interval);
    }
    return d;
  }

  /** Prints what is new in each tail since the last look. Not thread-safe. */
  static final class Follower {
    private final PrintWriter out;
    private final PrintWriter err;
    private int delivery = -1;
    private String stdout = "";
    private String stderr = "";

    Follower(PrintWriter out, PrintWriter err) {
      this.out = out;
      this.err = err;
    }

    /** Prints the new output of the item's JSON; returns whether the item has finished. */
    boolean show(ObjectNode item) {
      JsonNode live = item.get("output");
      int d = live.path("delivery").asInt();
      if (d != delivery) {
        if (delivery > 0) {
          err.println("--- delivery " + d + " ---");
        }
        delivery = d;
        stdout = "";
        stderr = "";
      }
      String newOut = live.path("stdout_tail").asText("");
      String newErr = live.path("stderr_tail").asText("");
      out.print(newPart(stdout, newOut));
      out.flush();
      err.print(newPart(stderr, newErr));
      err.flush();
      stdout = newOut;
      stderr = newErr;
      return live.path("finished").asBoolean();
    }

    /**
     * The part of {@code now} after what {@code before} already showed. Both are windows of one
     * stream, {@code now} no earlier than {@code before}: the longest end of {@code before} that
     * begins {@code now} is the overlap. When there is none, output was written faster than the
     * window between two looks, and all of {@code now} is new (after a marker).
     */
    static String newPart(String before, String now) {
      if (before.isEmpty()) {
        return now;
      }
      if (now.equals(before)) {
        return "";
      }
      for (int k = Math.min(before.length(), now.length()); k > 0; k--) {
        if (before.regionMatches(before.length() - k, now, 0, k)) {
          return now.substring(k);
        }
      }
      return "[... output skipped ...]\n" + now;
    }
  }
}
