package dev.tether.dashboard;

import dev.tether.jdbc.TestDatabase;

class SqliteDashboardApiTest extends DashboardApiContract {
  @Override
  protected TestDatabase newDatabase() {
    return TestDatabase.sqlite();
  }
}
