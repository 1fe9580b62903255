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

/** {@code tether requeue}: makes failed items pending again (redrive). */
@Command(
    name = "requeue",
    mixinStandardHelpOptions = true,
    description = "Requeue a failed item (its delivery count starts again), or with --failed every failed item of a queue.")
final class RequeueCommand implements Callable<Integer> {
  @Mixin StoreOptions store;

  @Parameters(paramLabel = "ID", arity = "0..1", description = "The failed item to requeue.")
  Long id;

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
    try (TetherStore s = store.open(false)) {
      LeaseManager lm = new LeaseManager(s, "tether-cli:" + ProcessHandle.current().pid());
      if (failed) {
        Stores.checkQueue(queue);
        int n = lm.redriveAll(queue);
        out.println("requeued " + n + " failed item" + (n == 1 ? "" : "s") + " of queue '" + queue + "'");
      } else {
        if (!lm.redrive(id)) {
          Optional<WorkItem> w = lm.find(id);
          if (w.isEmpty()) {
            throw new TetherCli.FailureException("no item " + id + "; list items with 'tether ls'");
          }
          throw new TetherCli.FailureException(
              "item " + id + " is " + w.get().status().dbValue() + ", not failed; only failed items can be requeued");
        }
        out.println("requeued item " + id);
      }
    }
    out.flush();
    return TetherCli.EXIT_OK;
  }
}
