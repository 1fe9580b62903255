package dev.tether.cli;

import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.QueueAdmin;
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

/** {@code tether cancel}: ends a pending or running item as cancelled. */
@Command(
    name = "cancel",
    mixinStandardHelpOptions = true,
    description = {
      "Cancel a pending or in-progress item: it ends 'cancelled' and is never delivered again"
          + " (unless requeued). A worker running it learns within about a second, kills its"
          + " command's process tree, and its result is refused.",
      "Exit 0: cancelled. 1: no such item, or it already ended (completed, failed or"
          + " cancelled). 2: usage error."
    })
final class CancelCommand implements Callable<Integer> {
  @Mixin StoreOptions store;

  @Parameters(paramLabel = "ID", description = "The item to cancel.")
  long id;

  @Option(names = "--reason", paramLabel = "R",
      description = "Why, kept as the item's error (default: ${DEFAULT-VALUE}).",
      defaultValue = "cancelled with tether cancel")
  String reason;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    if (reason.isBlank()) {
      throw new TetherCli.UsageException("--reason is empty: say why the item is cancelled");
    }
    try (TetherStore s = store.open(false)) {
      if (!new QueueAdmin(s).cancel(id, reason)) {
        Optional<WorkItem> w = new LeaseManager(s, "tether-cli:" + ProcessHandle.current().pid()).find(id);
        if (w.isEmpty()) {
          throw new TetherCli.FailureException("no item " + id + "; list items with 'tether ls'");
        }
        throw new TetherCli.FailureException("item " + id + " is " + w.get().status().dbValue()
            + "; only pending or in-progress items can be cancelled");
      }
    }
    out.println("cancelled item " + id);
    out.flush();
    return TetherCli.EXIT_OK;
  }
}
