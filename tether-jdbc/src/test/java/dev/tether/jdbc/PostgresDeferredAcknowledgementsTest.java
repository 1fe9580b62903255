package dev.tether.jdbc;

class PostgresDeferredAcknowledgementsTest extends DeferredAcknowledgementsCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }
}
