package dev.tether.jdbc;

import net.jqwik.api.lifecycle.BeforeContainer;

class PostgresLeaseManagerPropertyTest extends LeaseManagerPropertyCompatibilityTest {
  @BeforeContainer
  static void openDatabase() {
    open(TestDatabase.postgres());
  }
}
