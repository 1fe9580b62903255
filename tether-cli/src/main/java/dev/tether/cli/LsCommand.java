package dev.tether.cli;

import dev.tether.cli.internal.Durations;
import dev.tether.cli.internal.Json;
import dev.tether.cli.internal.Reports;
import dev.tether.cli.internal.Stores;
import dev.tether.cli.internal.Table;
import dev.tether.jdbc.ItemQuery;
import dev.tether.jdbc.QueueCount;
import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import dev.tether.jdbc.WorkStatus;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code tether ls}: lists items, newest first. */
@Command(
    name = "ls",
    mixinStandardHelpOptions = true,
    description = "List items, newest first. --json prints an array of item objects (see docs/CLI.md).")
final class LsCommand implements Callable<Integer> {
  @Mixin StoreOptions store;

  @Option(names = "--queue", description = "Only this queue.")
  String queue;

  @Option(names = "--status", paramLabel = "S", description = "Only pending, in_progress, completed, failed or cancelled.")
  String status;

  @Option(names = "--limit", defaultValue = "50", description = "At most N items (default: ${DEFAULT-VALUE}).")
  int limit;

  @Option(names = "--json", description = "Print JSON.")
  boolean json;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    if (queue != null) {
      Stores.checkQueue(queue);
    }
    WorkStatus st = null;
    if (status != null) {
      String s = status.toLowerCase(Locale.ROOT).replace('-', '_');
      if (!List.of("pending", "in_progress", "completed", "failed", "cancelled").contains(s)) {
        throw new TetherCli.UsageException(
            "unknown --status '" + status + "'; use pending, in_progress, completed, failed or cancelled");
      }
      st = WorkStatus.fromDb(s);
    }
    if (limit < 1 || limit > ItemQuery.MAX_LIMIT) {
      throw new TetherCli.UsageException("--limit must be 1..100000, was " + limit);
    }
    PrintWriter out = spec.commandLine().getOut();
    List<WorkItem> rows;
    Instant now;
    long total = -1; // known only when the listing may be truncated
    try (TetherStore s = store.open(false)) {
      QueueMonitor monitor = new QueueMonitor(s);
      rows = monitor.items(ItemQuery.all().withQueue(queue).withStatus(st).withLimit(limit));
      now = monitor.now();
      if (rows.size() == limit) {
        total = 0;
        for (QueueCount c : monitor.countsByStatus()) {
          if ((queue == null || queue.equals(c.queue())) && (st == null || st == c.status())) {
            total += c.count();
          }
        }
      }
    }
    if (json) {
      out.println(Json.MAPPER.writeValueAsString(Reports.rows(rows)));
    } else {
      Table t = new Table("ID", "QUEUE", "STATUS", "PRIORITY", "DUE", "ATTEMPTS", "DELIVERIES", "AGE",
          "COMMAND", "ERROR");
      for (WorkItem r : rows) {
        t.row(
            r.id(),
            r.queue(),
            r.status().dbValue(),
            r.priority(),
            due(r, now),
            r.attempts() + "/" + r.maxAttempts(),
            r.deliveryCount(),
            Durations.human(nonNegative(Duration.between(r.createdAt(), now))),
            Reports.commandOf(Reports.inputOf(r)),
            dev.tether.cli.internal.CommandResult.firstLine(r.errorMessage()));
      }
      t.print(out, Terminal.colour());
      if (rows.isEmpty()) {
        out.println("(no items)");
      } else if (total > rows.size()) {
        out.println("(" + rows.size() + " of " + total + " items, newest first; --limit N shows more)");
      }
    }
    out.flush();
    return TetherCli.EXIT_OK;
  }

  /** When a pending item is due: {@code now}, or {@code in 4m05s}; {@code -} for other statuses. */
  static String due(WorkItem r, Instant now) {
    if (r.status() != WorkStatus.PENDING || r.availableAt() == null) {
      return "-";
    }
    Duration d = Duration.between(now, r.availableAt());
    return d.isNegative() || d.isZero() ? "now" : "in " + Durations.human(d);
  }

  private static Duration nonNegative(Duration d) {
    return d.isNegative() ? Duration.ZERO : d;
  }
}
