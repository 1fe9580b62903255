package dev.tether.cli;

import dev.tether.cli.internal.Stores;
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

/** {@code tether requeue}: makes failed or cancelled items pending again (redrive) with a fresh budget. */
@Command(
    name = "requeue",
    mixinStandardHelpOptions = true,
    description = "Requeue a failed or cancelled item with a fresh budget (its charged attempts start again;"
        + " its delivery count is kept), or with --failed every failed item of a queue.")
final class RequeueCommand implements Callable<Integer> {
  @Mixin StoreOptions store;

  @Parameters(paramLabel = "ID", arity = "0..1", description = "The failed or cancelled item to requeue.")
  Long id;

  @Option(names = "--attempts", paramLabel = "N",
      description = "The new budget: N charged attempts (1-1000); default: the item's own max attempts.")
  Integer attempts;

  @Option(names = "--failed", description = "Requeue every failed item of --queue.")
  boolean failed;

  @Option(names = "--queue", defaultValue = "default", description = "Queue for --failed (default: ${DEFAULT-VALUE}).")
  String queue;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    if ((id == null) == !failed) {
      throw new TetherCli.UsageException("give either an item ID or --failed");
    }
    if (attempts != null && (attempts < 1 || attempts > 1000)) {
      throw new TetherCli.UsageException("--attempts must be 1..1000, was " + attempts);
    }
    try (TetherStore s = store.open(false)) {
      LeaseManager lm = new LeaseManager(s, "tether-cli:" + ProcessHandle.current().pid());
      if (failed) {
        Stores.checkQueue(queue);
        int n = attempts == null ? lm.redriveAll(queue) : lm.redriveAll(queue, attempts);
        out.println("requeued " + n + " failed item" + (n == 1 ? "" : "s") + " of queue '" + queue + "'");
      } else {
        if (!(attempts == null ? lm.redrive(id) : lm.redrive(id, attempts))) {
          Optional<WorkItem> w = lm.find(id);
          if (w.isEmpty()) {
            throw new TetherCli.FailureException("no item " + id + "; list items with 'tether ls'");
          }
          throw new TetherCli.FailureException(
              "item " + id + " is " + w.get().status().dbValue()
                  + "; only failed or cancelled items can be requeued");
        }
        out.println("requeued item " + id);
      }
    }
    out.flush();
    return TetherCli.EXIT_OK;
  }
}
