package dev.tether.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** {@code tether demo}: a narrated tour on a fresh store. */
@Command(name = "demo", mixinStandardHelpOptions = true, description = "A narrated tour on a fresh SQLite store; ends by itself in under a minute.")
final class DemoCommand implements Callable<Integer> {
  @Override
  public Integer call() {
    return TetherCli.EXIT_OK;
  }
}
