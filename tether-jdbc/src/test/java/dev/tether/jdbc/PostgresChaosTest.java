package dev.tether.jdbc;

class PostgresChaosTest extends ChaosCompatibilityTest {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }

  @Override
  protected boolean restartable() {
    return true;
  }
}
