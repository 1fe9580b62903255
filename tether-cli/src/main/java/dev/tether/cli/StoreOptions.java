package dev.tether.cli;

import dev.tether.cli.internal.StoreLocation;
import dev.tether.cli.internal.Stores;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** The {@code --db} options shared by every command that touches a store. */
public final class StoreOptions {
  /** The default store file. */
  public static final String DEFAULT_DB = "./tether.db";

  @Option(
      names = "--db",
      paramLabel = "URL",
      description =
          // line breaks of our own: picocli's wrapping would cut the URL and the path at ':' and '.'
          "Store: a SQLite file path, jdbc:sqlite:FILE or%njdbc:postgresql://HOST/DB (default:"
              + " $TETHER_DB,%nelse tether.db in the working directory). A password in it is never"
              + " printed.")
  String db;

  @Option(
      names = "--db-password-file",
      paramLabel = "PATH",
      description =
          "Read the PostgreSQL password from this file (one trailing line break ignored) instead"
              + " of the URL; without it and without a password in the URL, $PGPASSWORD is used.")
  Path passwordFile;

  @Option(
      names = "--schema",
      paramLabel = "NAME",
      description =
          "PostgreSQL schema holding Tether's tables (created if missing by commands that may"
              + " create the store); default: the URL's currentSchema, else the server's"
              + " search_path. Not for SQLite.")
  String schema;

  @Option(names = "--verbose", description = "Log more and print stack traces on errors.")
  boolean verbose;

  /** Creates the options (picocli fills them). */
  public StoreOptions() {}

  /**
   * Returns the effective store location as given, a password in it included: print {@link
   * #display()} instead.
   *
   * @return {@code --db}, else {@code TETHER_DB} (unless empty), else {@value #DEFAULT_DB}
   * @throws TetherCli.UsageException if {@code --db} is given empty
   */
  public String location() {
    if (db != null) {
      if (db.isBlank()) {
        throw new TetherCli.UsageException(
            "--db is empty: give a SQLite file path, jdbc:sqlite:FILE or"
                + " jdbc:postgresql://HOST/DB, or leave --db out for $TETHER_DB or " + DEFAULT_DB);
      }
      return db;
    }
    String env = System.getenv("TETHER_DB");
    return env != null && !env.isBlank() ? env : DEFAULT_DB;
  }

  /**
   * Returns the store location with its password resolved ({@code --db-password-file}, {@code
   * PGPASSWORD}).
   *
   * @return the location
   * @throws TetherCli.UsageException if {@code --db} is empty or the password sources contradict
   *     each other
   * @throws Stores.BadStoreException if the password file cannot be read
   */
  public StoreLocation resolve() {
    if (passwordFile != null && passwordFile.toString().isBlank()) {
      throw new TetherCli.UsageException("--db-password-file is empty: give the path of a file");
    }
    try {
      return StoreLocation.of(location(), passwordFile, System.getenv("PGPASSWORD"));
    } catch (IllegalArgumentException e) {
      throw new TetherCli.UsageException(e.getMessage());
    }
  }

  /**
   * Returns the store location with any password masked, for printing.
   *
   * @return the masked location
   */
  public String display() {
    return StoreLocation.mask(location());
  }

  /**
   * Opens the store.
   *
   * @param create whether a missing SQLite file may be created
   * @return the store
   */
  public TetherStore open(boolean create) {
    return open(create, null);
  }

  /**
   * Opens the store with a pool of at most {@code poolSize} connections.
   *
   * @param create whether a missing SQLite file may be created
   * @param poolSize the pool's size, or null for the engine's default
   * @return the store
   * @throws TetherCli.UsageException if the size is not in 1..1000
   */
  public TetherStore open(boolean create, Integer poolSize) {
    TetherStoreConfig.Builder config = TetherStoreConfig.builder();
    if (poolSize != null) {
      if (poolSize < 1 || poolSize > 1000) {
        throw new TetherCli.UsageException("--pool-size must be 1..1000, was " + poolSize);
      }
      config.maximumPoolSize(poolSize);
    }
    if (schema != null) {
      try {
        config.schema(schema);
      } catch (IllegalArgumentException e) {
        throw new TetherCli.UsageException("--schema: " + e.getMessage());
      }
    }
    return Stores.open(resolve(), create, config.build());
  }
}
