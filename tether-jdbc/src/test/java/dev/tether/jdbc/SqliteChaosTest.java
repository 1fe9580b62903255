package dev.tether.jdbc;

class SqliteChaosTest extends ChaosCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
