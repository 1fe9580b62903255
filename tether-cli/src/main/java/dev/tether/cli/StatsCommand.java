package dev.tether.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tether.cli.internal.Durations;
import dev.tether.cli.internal.Json;
import dev.tether.cli.internal.Reports;
import dev.tether.cli.internal.Table;
import dev.tether.jdbc.TetherStore;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code tether stats}: counts, in-flight leases, retry distribution. */
@Command(
    name = "stats",
    mixinStandardHelpOptions = true,
    description = {
      "Counts by status and queue, in-flight leases with heartbeat age and time left, and how many"
          + " deliveries finished items needed.",
      "--json: an object whose top-level pending, in_progress, completed, failed are totals over"
          + " all queues, with per-queue detail in 'queues', and the fleet in 'workers' (see"
          + " docs/CLI.md)."
    })
final class StatsCommand implements Callable<Integer> {
  @Mixin StoreOptions store;

  @Option(names = "--json", description = "Print JSON.")
  boolean json;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    ObjectNode o;
    try (TetherStore s = store.open(false)) {
      o = Reports.stats(s, new dev.tether.jdbc.QueueMonitor(s).now());
      o.set("workers", WorkersCommand.json(new dev.tether.jdbc.WorkerRegistry(s).list()));
    }
    if (json) {
      out.println(Json.MAPPER.writeValueAsString(o));
      out.flush();
      return TetherCli.EXIT_OK;
    }
    boolean colour = Terminal.colour();
    Table counts = new Table("QUEUE", "PENDING", "IN_PROGRESS", "COMPLETED", "FAILED", "CANCELLED");
    for (Map.Entry<String, JsonNode> e : o.get("queues").properties()) {
      JsonNode q = e.getValue();
      counts.row(e.getKey(), q.get("pending").asLong(), q.get("in_progress").asLong(),
          q.get("completed").asLong(), q.get("failed").asLong(), q.get("cancelled").asLong());
    }
    counts.row("(all)", o.get("pending").asLong(), o.get("in_progress").asLong(),
        o.get("completed").asLong(), o.get("failed").asLong(), o.get("cancelled").asLong());
    counts.print(out, colour);
    out.println();
    Table flight = new Table("IN FLIGHT", "QUEUE", "HOLDER", "ATTEMPT", "DELIVERY", "HEARTBEAT AGE",
        "LEASE LEFT", "COMMAND");
    for (JsonNode f : o.get("in_flight")) {
      flight.row(f.get("id").asLong(), f.get("queue").asText(), f.get("holder").asText(null),
          f.get("attempts").asInt() + "/" + f.get("max_attempts").asInt(),
          f.get("delivery_count").asInt(),
          f.get("heartbeat_age_ms").isNull() ? "-" : Durations.human(Duration.ofMillis(f.get("heartbeat_age_ms").asLong())),
          f.get("lease_left_ms").isNull() ? "-" : Durations.human(Duration.ofMillis(f.get("lease_left_ms").asLong())),
          f.get("command").asText());
    }
    flight.print(out, colour);
    out.println();
    Table retries = new Table("DELIVERIES", "FINISHED ITEMS");
    o.get("deliveries_per_finished_item").properties().forEach(e -> retries.row(e.getKey(), e.getValue().asLong()));
    retries.print(out, colour);
    long gone = 0;
    for (JsonNode w : o.get("workers")) {
      gone += w.get("state").asText().equals("gone") ? 1 : 0;
    }
    out.println();
    out.println("workers: " + (o.get("workers").size() - gone) + " alive, " + gone
        + " gone (tether workers lists them)");
    out.flush();
    return TetherCli.EXIT_OK;
  }
}
