package dev.tether.dashboard;

import dev.tether.jdbc.TestDatabase;

class PostgresDashboardApiTest extends DashboardApiContract {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.postgres();
  }
}
