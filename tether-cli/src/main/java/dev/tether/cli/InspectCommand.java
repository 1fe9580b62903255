package dev.tether.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tether.cli.internal.Json;
import dev.tether.cli.internal.Reports;
import dev.tether.cli.internal.Table;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import java.io.PrintWriter;
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
    try (TetherStore s = store.open(false)) {
      item = new LeaseManager(s, "tether-cli:" + ProcessHandle.current().pid()).find(id);
    }
    if (item.isEmpty()) {
      throw new TetherCli.FailureException("no item " + id + " in " + store.display() + "; list items with 'tether ls'");
    }
    ObjectNode o = Reports.item(item.get());
    if (json) {
      out.println(Json.MAPPER.writeValueAsString(o));
      out.flush();
      return TetherCli.EXIT_OK;
    }
    String[] keys = {
      "id", "queue", "status", "command", "priority", "delivery_count", "attempts", "max_attempts",
      "lease_holder", "lease_expires_at", "heartbeat_at", "checkpoint", "checkpoint_at",
      "checkpoint_delivery", "created_at", "started_at", "completed_at"
    };
    for (String k : keys) {
      JsonNode v = o.get(k);
      out.printf("%-17s %s%n", k + ":", v == null || v.isNull() ? "-" : Table.clean(v.asText()));
    }
    JsonNode error = o.get("error");
    if (error != null && !error.isNull()) {
      String[] lines = error.asText().split("\n", 2);
      out.printf("%-17s %s%n", "error:", Table.clean(lines[0]));
      if (lines.length > 1) {
        printTail(out, null, lines[1]);
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
          dev.tether.cli.internal.CommandResult.headline(a.path("reason").asText(null)));
    }
    deliveries.print(out, Terminal.colour());
    if (o.get("checkpoints").size() > 0) {
      out.println();
      Table cps = new Table("CHECKPOINT", "DELIVERY", "HOLDER", "AT", "REASON");
      for (JsonNode c : o.get("checkpoints")) {
        cps.row(
            c.path("kind").asText(),
            c.path("delivery").asInt(),
            c.path("lease_holder").asText(null),
            c.path("at").asText(null),
            dev.tether.cli.internal.CommandResult.headline(c.path("reason").asText(null)));
      }
      cps.print(out, Terminal.colour());
    }
    JsonNode result = o.get("result");
    if (result != null && !result.isNull()) {
      out.println();
      out.println("exit status: " + result.path("exit_status").asInt() + "  ("
          + result.path("duration_ms").asLong() + " ms, " + result.path("chunks").asLong()
          + " output chunks)");
      printTail(out, "stdout", result.path("stdout_tail").asText(""));
      printTail(out, "stderr", result.path("stderr_tail").asText(""));
    }
    out.flush();
    return TetherCli.EXIT_OK;
  }

  private static void printTail(PrintWriter out, String name, String text) {
    if (text.isEmpty()) {
      return;
    }
    if (name != null) {
      out.println("--- " + name + " (tail) ---");
    }
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      b.append(c == '\n' || c == '\t' || !Character.isISOControl(c) ? c : '?');
    }
    out.println(b.toString().stripTrailing());
  }
}
