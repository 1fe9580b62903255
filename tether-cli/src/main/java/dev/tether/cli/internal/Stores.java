package dev.tether.cli.internal;

import dev.tether.QueueName;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * Opens the store named by {@code --db} after checking, without writing anything, that an
 * existing SQLite file is a Tether store: a corrupt file or a foreign database is refused before
 * the store's migrations could touch it.
 */
public final class Stores {

  private Stores() {}

  /** A {@code --db} that cannot be used; the message says why and what to do. */
  public static final class BadStoreException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    BadStoreException(String message) {
      super(message);
    }

    BadStoreException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * Validates a queue name.
   *
   * @param queue the name
   * @return the name
   * @throws IllegalArgumentException if it breaks the store's rule ({@link QueueName}): characters
   *     other than letters, digits, {@code _.:-}, or longer than {@value QueueName#MAX_LENGTH}
   */
  public static String checkQueue(String queue) {
    if (!QueueName.isValid(queue)) {
      throw new IllegalArgumentException(
          "invalid queue name '"
              + queue
              + "': use 1-"
              + QueueName.MAX_LENGTH
              + " letters, digits, '_', '.', ':' or '-', starting with a letter or digit");
    }
    return queue;
  }

  /**
   * Opens the store.
   *
   * @param location the {@code --db} location with its password resolved
   * @param create whether a missing SQLite file may be created (false for read-only commands)
   * @return the open store
   * @throws BadStoreException if the file is missing (and may not be created), corrupt, not a
   *     Tether store, or the database cannot be opened; its message shows the location with any
   *     password masked
   */
  public static TetherStore open(StoreLocation location, boolean create) {
    return open(location, create, TetherStoreConfig.defaults());
  }

  /**
   * Opens the store with the given options (a PostgreSQL {@code --schema}).
   *
   * @param location the {@code --db} location with its password resolved
   * @param create whether a missing SQLite file may be created (false for read-only commands)
   * @param config the store's options
   * @return the open store
   * @throws BadStoreException as {@link #open(StoreLocation, boolean)}, and when the options do
   *     not fit the database (a schema on SQLite)
   */
  public static TetherStore open(StoreLocation location, boolean create, TetherStoreConfig config) {
    String db = location.given();
    String lower = db.toLowerCase(Locale.ROOT);
    if (!lower.startsWith("jdbc:") && lower.contains("://")) {
      throw new BadStoreException("unsupported --db '" + location.display()
          + "': give a file path, jdbc:sqlite:FILE or jdbc:postgresql://...");
    }
    if (!lower.startsWith("jdbc:") || lower.startsWith("jdbc:sqlite:")) {
      sqliteFile(db).ifPresent(file -> checkSqliteFile(file, create));
    } else if (!lower.startsWith("jdbc:postgresql:")) {
      throw new BadStoreException("unsupported --db '" + location.display()
          + "': give a file path, jdbc:sqlite:FILE or jdbc:postgresql://...");
    } else if (!create) {
      checkPostgresStore(location, config.schema().orElse(null));
    }
    try {
      return TetherStore.open(location.openUrl(), config);
    } catch (RuntimeException e) {
      throw new BadStoreException("cannot open --db " + location.display() + ": " + oneLine(e), e);
    }
  }

  /** The file of an SQLite {@code --db} (path or {@code jdbc:sqlite:} URL); empty otherwise. */
  private static Optional<Path> sqliteFile(String db) {
    String lower = db.toLowerCase(Locale.ROOT);
    if (lower.startsWith("jdbc:") && !lower.startsWith("jdbc:sqlite:")) {
      return Optional.empty();
    }
    String file = lower.startsWith("jdbc:sqlite:") ? db.substring("jdbc:sqlite:".length()) : db;
    int q = file.indexOf('?');
    if (q >= 0) {
      file = file.substring(0, q);
    }
    if (file.startsWith("file:")) {
      file = file.substring("file:".length());
    }
    if (file.isEmpty() || file.equals(":memory:")) {
      return Optional.empty();
    }
    try {
      return Optional.of(Path.of(file));
    } catch (InvalidPathException e) {
      throw new BadStoreException(
          "--db '" + escapeLineBreaks(file) + "' is not a path this system can name", e);
    }
  }

  /**
   * Checks that an existing SQLite store, and its {@code -wal} and {@code -shm} files when they
   * exist, can be written by this process, for commands that must write (the worker). SQLite opens
   * a file it may not write read-only without complaint, and every write then fails: a worker
   * started on such a file would log the same error every second forever instead of saying so
   * once. A missing file, and a PostgreSQL URL, pass (their problems show when opening).
   *
   * @param db a file path, {@code jdbc:sqlite:} URL or {@code jdbc:postgresql://} URL
   * @throws BadStoreException naming the file that is read-only and what to do
   */
  public static void checkWritable(String db) {
    Optional<Path> file = sqliteFile(db);
    if (file.isEmpty()) {
      return;
    }
    Path f = file.get();
    for (Path p : new Path[] {f, Path.of(f + "-wal"), Path.of(f + "-shm")}) {
      if (Files.exists(p) && !Files.isDirectory(p) && !Files.isWritable(p)) {
        throw new BadStoreException(
            p + " is read-only for this process (user " + System.getProperty("user.name")
                + "): a worker writes leases and results to its store; make it writable (for"
                + " example chmod u+w) or run as its owner");
      }
    }
  }

  /**
   * For a command that only reads: checks that the PostgreSQL database holds a Tether store (its
   * schema version table, in the schema the connection uses) before the store is opened, because
   * opening one migrates it, that is, creates the tables in an empty database. Reads only.
   */
  private static void checkPostgresStore(StoreLocation location, String schema) {
    boolean exists;
    try (Connection c = DriverManager.getConnection(location.openUrl())) {
      if (schema != null) {
        c.setSchema(schema); // --schema: as the store's own connections (its search_path)
      }
      try (ResultSet rs = c.createStatement().executeQuery(
          "SELECT to_regclass('tether_schema_version') IS NOT NULL")) {
        exists = rs.next() && rs.getBoolean(1);
      }
    } catch (SQLException e) {
      throw new BadStoreException("cannot open --db " + location.display() + ": " + oneLine(e), e);
    }
    if (!exists) {
      throw new BadStoreException("no Tether store at " + location.display()
          + (schema == null ? " (no tether_schema_version table in its schema); check --db (or"
              + " TETHER_DB)" : " in schema " + schema + " (no tether_schema_version table there);"
              + " check --db (or TETHER_DB) and --schema")
          + ", or enqueue an item or start a worker to create it");
    }
  }

  private static void checkSqliteFile(Path file, boolean create) {
    if (!Files.exists(file)) {
      if (!create) {
        throw new BadStoreException(
            "no Tether store at "
                + file
                + "; check --db (or TETHER_DB), or enqueue an item to create it");
      }
      Path parent = file.toAbsolutePath().getParent();
      if (parent != null && !Files.isDirectory(parent)) {
        throw new BadStoreException(
            "cannot create a store at " + file + ": directory " + parent + " does not exist");
      }
      return;
    }
    if (Files.isDirectory(file)) {
      throw new BadStoreException("--db " + file + " is a directory; give a database file");
    }
    try {
      if (Files.size(file) == 0) {
        return; // an empty file is a fresh database
      }
    } catch (java.io.IOException e) {
      throw new BadStoreException("cannot read " + file + ": " + e.getMessage(), e);
    }
    String url = "jdbc:sqlite:file:" + file.toAbsolutePath() + "?mode=ro";
    try (Connection c = DriverManager.getConnection(url)) {
      boolean hasTables = false;
      boolean tether = false;
      try (ResultSet rs =
          c.createStatement().executeQuery("SELECT name FROM sqlite_master WHERE type = 'table'")) {
        while (rs.next()) {
          hasTables = true;
          if ("tether_schema_version".equals(rs.getString(1))) {
            tether = true;
          }
        }
      }
      if (hasTables && !tether) {
        throw new BadStoreException(
            file + " is an SQLite database but not a Tether store; point --db at a Tether store"
                + " or at a new file");
      }
    } catch (SQLException e) {
      throw new BadStoreException(
          file + " is not a usable SQLite database (" + oneLine(e) + "); point --db at a Tether"
              + " store or at a new file", e);
    }
  }

  /**
   * {@code text} with its line breaks written as {@code \n} and {@code \r}, so that a value
   * quoted in an error message keeps the message on one line.
   *
   * @param text the value
   * @return the value on one line
   */
  public static String escapeLineBreaks(String text) {
    return text.replace("\n", "\\n").replace("\r", "\\r");
  }

  /**
   * Returns the message of an exception as one line: its first line, with any other control
   * character (a user's argument echoed in the message may hold an escape sequence or a carriage
   * return) shown as {@code \\uXXXX}, and any password in a URL masked ({@link
   * StoreLocation#mask}).
   *
   * @param e the exception
   * @return the message, or its type when it has none
   */
  public static String oneLine(Throwable e) {
    String m = messageOf(e);
    int nl = m.indexOf('\n');
    return printable(nl < 0 ? m : m.substring(0, nl));
  }

  /**
   * The message of {@code e} line by line (at most {@code max} lines, the last saying how many
   * more there were), each as {@link #oneLine} shows it; blank lines left out.
   *
   * @param e the error
   * @param max the most lines, at least 2
   * @return the lines, at least one
   */
  public static List<String> lines(Throwable e, int max) {
    List<String> out = new ArrayList<>();
    String[] all = messageOf(e).split("\\r?\\n");
    int shown = 0;
    for (int i = 0; i < all.length; i++) {
      if (all[i].isBlank()) {
        continue;
      }
      if (shown == max - 1 && i < all.length - 1) {
        out.add("... (" + (all.length - i) + " more lines; --verbose shows the whole error)");
        break;
      }
      out.add(printable(all[i]));
      shown++;
    }
    if (out.isEmpty()) {
      out.add(e.getClass().getSimpleName());
    }
    return out;
  }

  private static String messageOf(Throwable e) {
    String m = e.getMessage();
    return m == null || m.isBlank() ? e.getClass().getSimpleName() : m;
  }

  /** One line, trimmed, with control and lone surrogate characters escaped and secrets masked. */
  private static String printable(String raw) {
    String line = raw.trim();
    StringBuilder b = new StringBuilder(line.length());
    for (int i = 0; i < line.length(); i++) {
      char c = line.charAt(i);
      boolean paired = Character.isHighSurrogate(c) && i + 1 < line.length()
          && Character.isLowSurrogate(line.charAt(i + 1));
      if (paired) {
        b.append(c).append(line.charAt(++i));
      } else if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || Character.isSurrogate(c)) {
        // a lone surrogate would reach the terminal as '?': show which it was
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return StoreLocation.mask(b.toString());
  }
}
