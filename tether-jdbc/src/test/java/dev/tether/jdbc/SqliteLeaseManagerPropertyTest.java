package dev.tether.jdbc;

import net.jqwik.api.lifecycle.BeforeContainer;

class SqliteLeaseManagerPropertyTest extends LeaseManagerPropertyCompatibilityTest {
  @BeforeContainer
  static void openDatabase() {
    open(TestDatabase.sqlite());
  }
}
