package dev.tether.jdbc;

import dev.tether.test.SettableClock;
import java.time.Instant;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** Opens a fresh database and a store driven by a settable clock for each test. */
abstract class StoreTestBase {
  protected TestDatabase db;
  protected TetherStore store;
  protected SettableClock clock;

  /** Creates this engine's fresh database. */
  protected abstract TestDatabase newDatabase();

  @BeforeEach
  void openStore() {
    db = newDatabase();
    clock = new SettableClock(Instant.parse("2026-03-01T10:00:00Z"));
    store = db.open(TetherStoreConfig.builder().clock(clock).maximumPoolSize(6).build());
  }

  @AfterEach
  void closeStore() {
    if (store != null) {
      store.close();
    }
    if (db != null) {
      db.close();
    }
  }
}
