package dev.tether.cli;

import dev.tether.cli.internal.HeldLease;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code tether beat}: proves progress for the item whose command runs this. */
@Command(
    name = "beat",
    mixinStandardHelpOptions = true,
    description = {
      "Prove progress of the item this command runs for (from a command run by 'tether"
          + " worker', as \"$TETHER_CLI\" beat), for a step that prints nothing, or from a"
          + " process the command delegated the work to: the worker extends the lease for it as"
          + " for output.",
      "Exit 0: the beat is recorded. 4: the lease is lost or the item was cancelled (one line"
          + " on standard error): stop working. 2: not run under a worker."
    })
final class BeatCommand implements Callable<Integer> {
  @Mixin StoreOptions store;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    HeldLease lease = LeaseCommands.lease();
    return LeaseCommands.run(spec, store, lease, "beat",
        leases -> leases.beat(lease.itemId(), lease.token()));
  }
}
