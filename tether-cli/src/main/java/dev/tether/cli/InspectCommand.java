package dev.tether.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tether.cli.internal.CommandResult;
import dev.tether.cli.internal.Durations;
import dev.tether.cli.internal.Json;
import dev.tether.cli.internal.Reports;
import dev.tether.cli.internal.Table;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code tether inspect ID}: one item with its deliveries, checkpoints and output tail. */
@Command(
    name = "inspect",
    mixinStandardHelpOptions = true,
    description = "Show one item: its command, each attempt, its checkpoints and its output tail.")
final class InspectCommand implements Callable<Integer> {
  @Mixin StoreOptions store;

  @Parameters(paramLabel = "ID", description = "The item id.")
  long id;

  @Option(names = "--json", description = "Print JSON (see docs/CLI.md).")
  boolean json;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    Optional<WorkItem> item;
    Instant now;
    try (TetherStore s = store.open(false)) {
      item = new LeaseManager(s, "tether-cli:" + ProcessHandle.current().pid()).find(id);
      now = new QueueMonitor(s).now();
    }
    if (item.isEmpty()) {
      throw new TetherCli.FailureException("no item " + id + " in " + store.display() + "; list items with 'tether ls'");
    }
    ObjectNode o = Reports.item(item.get(), now);
    if (json) {
      out.println(Json.MAPPER.writeValueAsString(o));
      out.flush();
      return TetherCli.EXIT_OK;
    }
    String[] keys = {
      "id", "queue", "status", "command", "priority", "delivery_count", "attempts", "max_attempts",
      "lease_holder", "lease_expires_at", "heartbeat_at", "checkpoint", "checkpoint_at",
      "checkpoint_delivery", "available_at", "created_at", "started_at", "completed_at"
    };
    for (String k : keys) {
      JsonNode v = o.get(k);
      out.printf("%-17s %s%n", k + ":", v == null || v.isNull() ? "-" : oneLine(v.asText()));
    }
    JsonNode error = o.get("error");
    if (error != null && !error.isNull()) {
      // the whole error: its first line here, the rest (the command's tails) below it
      String[] lines = error.asText().split("\n", 2);
      out.printf("%-17s %s%n", "error:", oneLine(lines[0]));
      if (lines.length > 1) {
        printText(out, lines[1]);
      }
    } else {
      out.printf("%-17s %s%n", "error:", "-");
    }
    out.println();
    Table deliveries = new Table("DELIVERY", "OUTCOME", "HOLDER", "AT", "REASON");
    for (JsonNode a : o.get("deliveries")) {
      deliveries.row(
          a.path("delivery").asInt(),
          a.path("outcome").asText(null),
          a.path("holder").asText(null),
          a.path("at").asText(null),
          CommandResult.headline(a.path("reason").asText(null)));
    }
    deliveries.print(out, Terminal.colour());
    printOtherCheckpoints(out, o);
    JsonNode result = o.get("result");
    if (result != null && !result.isNull()) {
      out.println();
      out.println("exit status: " + result.path("exit_status").asInt() + "  ("
          + result.path("duration_ms").asLong() + " ms, " + result.path("chunks").asLong()
          + " output chunks)");
    }
    for (JsonNode a : o.get("deliveries")) {
      String stdout = a.path("stdout_tail").asText("");
      String stderr = a.path("stderr_tail").asText("");
      if (stdout.isEmpty() && stderr.isEmpty()) {
        continue;
      }
      String what = "delivery " + a.path("delivery").asInt() + ", " + a.path("outcome").asText();
      JsonNode live = o.get("output");
      if ("in_progress".equals(a.path("outcome").asText()) && !live.path("output_age_ms").isNull()) {
        what += ", last output " + Durations.human(java.time.Duration.ofMillis(
            live.path("output_age_ms").asLong())) + " ago";
      }
      out.println();
      printTail(out, "stdout (tail) of " + what, stdout);
      printTail(out, "stderr (tail) of " + what, stderr);
    }
    out.flush();
    return TetherCli.EXIT_OK;
  }

  /**
   * Prints the checkpoints that the deliveries table does not already show (a delivery shows the
   * last checkpoint that ended it): redrives, progress takeovers, cancellations of a pending
   * item, and earlier checkpoints of a delivery.
   */
  private static void printOtherCheckpoints(PrintWriter out, ObjectNode o) {
    JsonNode cps = o.get("checkpoints");
    Table t = new Table("CHECKPOINT", "DELIVERY", "HOLDER", "AT", "REASON");
    int shown = 0;
    for (int i = 0; i < cps.size(); i++) {
      JsonNode c = cps.get(i);
      boolean laterOfSameDelivery = false;
      for (int j = i + 1; j < cps.size(); j++) {
        JsonNode later = cps.get(j);
        if (later.path("delivery").asInt() == c.path("delivery").asInt()
            && later.path("ends_delivery").asBoolean()) {
          laterOfSameDelivery = true;
        }
      }
      if (c.path("ends_delivery").asBoolean() && !laterOfSameDelivery) {
        continue; // the delivery's own row
      }
      t.row(
          c.path("kind").asText(),
          c.path("delivery").asInt(),
          c.path("lease_holder").asText(null),
          c.path("at").asText(null),
          CommandResult.headline(c.path("reason").asText(null)));
      shown++;
    }
    if (shown > 0) {
      out.println();
      t.print(out, Terminal.colour());
    }
  }

  /** The whole text on one line: line breaks as spaces, other control characters as '?'. */
  private static String oneLine(String text) {
    StringBuilder b = new StringBuilder(text.length());
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      b.append(c == '\n' || c == '\t' ? ' ' : Character.isISOControl(c) ? '?' : c);
    }
    return b.toString();
  }

  private static void printTail(PrintWriter out, String title, String text) {
    if (text.isEmpty()) {
      return;
    }
    out.println("--- " + title + " ---");
    printText(out, text);
  }

  private static void printText(PrintWriter out, String text) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      b.append(c == '\n' || c == '\t' || !Character.isISOControl(c) ? c : '?');
    }
    out.println(b.toString().stripTrailing());
  }
}
