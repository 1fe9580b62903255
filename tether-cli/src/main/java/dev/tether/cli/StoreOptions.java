package dev.tether.cli;

import dev.tether.cli.internal.Stores;
import dev.tether.jdbc.TetherStore;
import picocli.CommandLine.Option;

/** The {@code --db} option shared by every command that touches a store. */
public final class StoreOptions {
  /** The default store file. */
  public static final String DEFAULT_DB = "./tether.db";

  @Option(
      names = "--db",
      paramLabel = "URL",
      description =
          "Store: a SQLite file path, jdbc:sqlite:FILE or jdbc:postgresql://HOST/DB"
              + " (default: $TETHER_DB, else ./tether.db).")
  String db;

  @Option(names = "--verbose", description = "Log more and print stack traces on errors.")
  boolean verbose;

  /** Creates the options (picocli fills them). */
  public StoreOptions() {}

  /**
   * Returns the effective store location.
   *
   * @return {@code --db}, else {@code TETHER_DB}, else {@value #DEFAULT_DB}
   */
  public String location() {
    if (db != null && !db.isBlank()) {
      return db;
    }
    String env = System.getenv("TETHER_DB");
    return env != null && !env.isBlank() ? env : DEFAULT_DB;
  }

  /**
   * Opens the store.
   *
   * @param create whether a missing SQLite file may be created
   * @return the store
   */
  public TetherStore open(boolean create) {
    return Stores.open(location(), create);
  }
}
