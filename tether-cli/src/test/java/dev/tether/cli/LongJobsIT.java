package dev.tether.cli;

/** {@link LongJobsBase} on a temporary SQLite file. */
class LongJobsIT extends LongJobsBase {
  @Override
  String storeUrl() {
    return dir.resolve("e2e.db").toString();
  }

  @Override
  String engine() {
    return "sqlite";
  }
}
