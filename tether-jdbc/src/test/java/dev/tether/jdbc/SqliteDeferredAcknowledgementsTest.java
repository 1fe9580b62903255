package dev.tether.jdbc;

class SqliteDeferredAcknowledgementsTest extends DeferredAcknowledgementsCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
