package dev.tether.cli;

import dev.tether.cli.internal.HeldLease;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/**
 * {@code tether checkpoint}: records the progress checkpoint of the item whose command runs this,
 * through the lease in {@code TETHER_LEASE}.
 */
@Command(
    name = "checkpoint",
    mixinStandardHelpOptions = true,
    description = {
      "Record the progress checkpoint of the item this command runs for (from a command run by"
          + " 'tether worker', as \"$TETHER_CLI\" checkpoint DATA): it replaces the previous one,"
          + " the next delivery finds it in TETHER_CHECKPOINT, and it counts as a beat of the"
          + " command. DATA is text; without it (or with -) standard input is read.",
      "Exit 0: the checkpoint is durable. 4: the lease is lost or the item was cancelled (one"
          + " line on standard error): stop working. 2: not run under a worker, or DATA over"
          + " 64 KiB."
    })
final class CheckpointCommand implements Callable<Integer> {
  /** The largest checkpoint a command may record: it travels back in the environment. */
  static final int MAX_COMMAND_CHECKPOINT_BYTES = 64 * 1024;

  @Mixin StoreOptions store;

  @Parameters(paramLabel = "DATA", arity = "0..1",
      description = "The checkpoint (text); - or nothing: read standard input.")
  String data;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws IOException {
    HeldLease lease = LeaseCommands.lease();
    byte[] bytes = data == null || data.equals("-")
        ? System.in.readAllBytes()
        : data.getBytes(StandardCharsets.UTF_8);
    if (bytes.length > MAX_COMMAND_CHECKPOINT_BYTES) {
      throw new TetherCli.UsageException("the checkpoint is " + bytes.length + " bytes, over the "
          + MAX_COMMAND_CHECKPOINT_BYTES + " a command may record (it returns in"
          + " TETHER_CHECKPOINT); nothing was written: keep large state in a file and checkpoint"
          + " its name");
    }
    return LeaseCommands.run(spec, store, lease, "checkpoint",
        leases -> leases.checkpoint(lease.itemId(), lease.token(), bytes));
  }
}
