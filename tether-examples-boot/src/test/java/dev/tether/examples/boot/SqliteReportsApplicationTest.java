package dev.tether.examples.boot;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The example application on SQLite: the application's DataSource is a SQLite file. */
class SqliteReportsApplicationTest extends ReportsApplicationCompatibilityTest {
  static final Path DIR;

  static {
    try {
      DIR = Files.createTempDirectory("tether-boot-example");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", () -> "jdbc:sqlite:" + DIR.resolve("reports.db"));
    registry.add("spring.sql.init.platform", () -> "sqlite");
  }
}
