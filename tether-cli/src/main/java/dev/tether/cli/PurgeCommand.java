package dev.tether.cli;

import dev.tether.cli.internal.Durations;
import dev.tether.jdbc.QueueAdmin;
import dev.tether.jdbc.TetherStore;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code tether purge}: deletes old completed items. */
@Command(
    name = "purge",
    mixinStandardHelpOptions = true,
    description = "Delete completed items (and their checkpoints) that finished more than DURATION ago. Failed items are kept.")
final class PurgeCommand implements Callable<Integer> {
  @Mixin StoreOptions store;

  @Option(names = "--completed-before", required = true, paramLabel = "DURATION",
      description = "Age of the items to delete (0s: every completed item).")
  Duration age;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    int n;
    try (TetherStore s = store.open(false)) {
      n = new QueueAdmin(s).purgeCompletedOlderThan(age);
    }
    out.println("purged " + n + " completed item" + (n == 1 ? "" : "s") + " finished more than " + Durations.human(age) + " ago");
    out.flush();
    return TetherCli.EXIT_OK;
  }
}
