package dev.tether.cli;

/** {@link CliChaosBase} on one SQLite file. */
class CliChaosIT extends CliChaosBase {
  @Override
  String storeUrl() {
    return dir.resolve("e2e.db").toString();
  }

  @Override
  String engine() {
    return "sqlite";
  }
}
