package dev.tether.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tether.cli.internal.Json;
import dev.tether.jdbc.RecoveryStats;
import dev.tether.jdbc.RecoverySweep;
import dev.tether.jdbc.TetherStore;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code tether sweep}: one recovery pass. */
@Command(
    name = "sweep",
    mixinStandardHelpOptions = true,
    description = "Run one recovery pass: expired leases become retries, or failures past their attempts. Prints the RecoveryStats.")
final class SweepCommand implements Callable<Integer> {
  @Mixin StoreOptions store;

  @Option(names = "--json", description = "Print JSON.")
  boolean json;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    RecoveryStats r;
    try (TetherStore s = store.open(false)) {
      if (!json) {
        spec.commandLine().getErr().println("sweeping expired leases...");
      }
      try (RecoverySweep sweep = new RecoverySweep(s)) {
        r = sweep.scanAndRecover();
      }
    }
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("expired_found", r.expiredFound());
    o.put("recovered", r.recovered());
    o.put("failed", r.failed());
    o.put("checkpoints_created", r.checkpointsCreated());
    o.put("errors", r.errors());
    o.put("duration_ms", r.duration().toMillis());
    if (json) {
      out.println(Json.MAPPER.writeValueAsString(o));
    } else {
      out.println(
          "expired found: " + r.expiredFound() + ", recovered: " + r.recovered() + ", failed: "
              + r.failed() + ", checkpoints: " + r.checkpointsCreated() + ", errors: " + r.errors()
              + ", took " + r.duration().toMillis() + " ms");
    }
    out.flush();
    return r.errors() > 0 ? TetherCli.EXIT_FAILURE : TetherCli.EXIT_OK;
  }
}
