package dev.tether.cli;

import dev.tether.cli.internal.HeldLease;
import dev.tether.jdbc.ItemCancelledException;
import dev.tether.jdbc.ItemFinalizedException;
import dev.tether.jdbc.LeaseLostException;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.TetherStore;
import java.util.function.Consumer;
import picocli.CommandLine;

/** What {@code tether checkpoint} and {@code tether beat} share: the lease, the store, the exit codes. */
final class LeaseCommands {
  private LeaseCommands() {}

  /** The lease from {@code TETHER_LEASE}; a usage error when it is missing or malformed. */
  static HeldLease lease() {
    try {
      return HeldLease.parse(System.getenv(HeldLease.VARIABLE));
    } catch (IllegalArgumentException e) {
      throw new TetherCli.UsageException(e.getMessage());
    }
  }

  /**
   * Runs {@code call} on the store; a refused lease is one line and {@link
   * TetherCli#EXIT_LEASE_LOST}.
   */
  static int run(CommandLine.Model.CommandSpec spec, StoreOptions store, HeldLease lease,
      String what, Consumer<LeaseManager> call) {
    try (TetherStore s = store.open(false)) {
      call.accept(new LeaseManager(s, "tether-cli:" + ProcessHandle.current().pid()));
      return TetherCli.EXIT_OK;
    } catch (ItemCancelledException e) {
      spec.commandLine().getErr().println("tether " + what + ": item " + lease.itemId()
          + " was cancelled; stop working on it");
      spec.commandLine().getErr().flush();
      return TetherCli.EXIT_LEASE_LOST;
    } catch (LeaseLostException | ItemFinalizedException e) {
      spec.commandLine().getErr().println("tether " + what + ": the lease on item "
          + lease.itemId() + " is lost (another delivery holds it, or it ended); stop working on"
          + " it");
      spec.commandLine().getErr().flush();
      return TetherCli.EXIT_LEASE_LOST;
    }
  }
}
