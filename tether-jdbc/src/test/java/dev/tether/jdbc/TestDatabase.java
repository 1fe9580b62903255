package dev.tether.jdbc;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * A fresh, isolated database for one test: a temp SQLite file, or a new PostgreSQL schema
 * (dropped on close) on the server {@link TestPostgres} chose for the tests. Shared with other
 * modules' tests through this module's test-jar.
 */
public abstract class TestDatabase implements AutoCloseable {

  /**
   * The URL (or path) a store or a child process opens.
   *
   * @return the URL or path
   */
  public abstract String url();

  /** Opens a store on this database. */
  TetherStore open(TetherStoreConfig config) {
    return TetherStore.open(url(), config);
  }

  @Override
  public abstract void close();

  /**
   * A SQLite file in a fresh temp directory, deleted on close.
   *
   * @return the database
   */
  public static TestDatabase sqlite() {
    return new Sqlite();
  }

  /**
   * A fresh PostgreSQL schema, dropped on close; fails (never skips) when no server can be used.
   *
   * @return the database
   */
  public static TestDatabase postgres() {
    return new Postgres();
  }

  static final class Sqlite extends TestDatabase {
    private final Path dir;

    Sqlite() {
      try {
        dir = Files.createTempDirectory("tether-sqlite-test");
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public String url() {
      return dir.resolve("tether.db").toString();
    }

    @Override
    public void close() {
      try (Stream<Path> s = Files.walk(dir)) {
        s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException e) {
        // temp files; nothing to do
      }
    }
  }

  static final class Postgres extends TestDatabase {
    private final PostgresTestSchema schema = new PostgresTestSchema("tether_t_");

    @Override
    public String url() {
      return schema.url();
    }

    @Override
    public void close() {
      schema.close();
    }
  }
}
