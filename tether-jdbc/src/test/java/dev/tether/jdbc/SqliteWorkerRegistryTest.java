package dev.tether.jdbc;

class SqliteWorkerRegistryTest extends WorkerRegistryCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
