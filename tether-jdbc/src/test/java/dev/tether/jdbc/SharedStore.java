package dev.tether.jdbc;

/** One database and store shared by every test of a class (its own SQLite file or PG schema). */
final class SharedStore implements AutoCloseable {
  final TestDatabase db;
  final TetherStore store;

  SharedStore(TestDatabase db) {
    this.db = db;
    this.store = db.open(TetherStoreConfig.builder().maximumPoolSize(4).build());
  }

  @Override
  public void close() {
    store.close();
    db.close();
  }
}
