package dev.tether.jdbc;

class PostgresWorkerRegistryTest extends WorkerRegistryCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }
}
