package dev.tether.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import dev.tether.cli.internal.Durations;
import dev.tether.cli.internal.Json;
import dev.tether.cli.internal.Table;
import dev.tether.dashboard.TetherDashboard;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkerInfo;
import dev.tether.jdbc.WorkerRegistry;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code tether workers}: the fleet, from the store's worker registry. */
@Command(
    name = "workers",
    mixinStandardHelpOptions = true,
    description = {
      "The worker processes on the store: host, pid, version, queues, loops, concurrency, items in"
          + " flight, started, last seen (the store's clock). Each worker refreshes its row every 10s;"
          + " one not seen for 3 refreshes is shown as gone, and workers delete rows silent for 60.",
      "--json: an array of objects (see docs/CLI.md)."
    })
final class WorkersCommand implements Callable<Integer> {
  @Mixin StoreOptions store;

  @Option(names = "--json", description = "Print JSON.")
  boolean json;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    List<WorkerInfo> workers;
    try (TetherStore s = store.open(false)) {
      workers = new WorkerRegistry(s).list();
    }
    if (json) {
      out.println(Json.MAPPER.writeValueAsString(json(workers)));
      out.flush();
      return TetherCli.EXIT_OK;
    }
    Table t = new Table("WORKER", "HOST", "PID", "VERSION", "QUEUES", "LOOPS", "CONCURRENCY", "IN FLIGHT",
        "STARTED", "LAST SEEN", "STATE");
    for (WorkerInfo w : workers) {
      t.row(w.workerId(), w.host(), w.pid(), w.version(), String.join(",", w.queues()), w.loops(),
          w.concurrency(), w.inFlight(), w.startedAt(), Durations.human(w.sinceSeen()) + " ago",
          w.gone() ? "gone" : "alive");
    }
    t.print(out, Terminal.colour());
    if (workers.isEmpty()) {
      out.println("(no worker has registered on this store)");
    }
    out.flush();
    return TetherCli.EXIT_OK;
  }

  /** The fleet as the JSON array of {@code workers --json} and {@code stats --json}. */
  static ArrayNode json(List<WorkerInfo> workers) {
    ArrayNode a = Json.MAPPER.createArrayNode();
    workers.forEach(w -> a.add(TetherDashboard.workerJson(w)));
    return a;
  }
}
