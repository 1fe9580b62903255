package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The CLI uses tether-jdbc only through its public API: no main source file may name the internal
 * package {@code dev.tether.jdbc.internal} (import, static import or fully qualified use), nor
 * carry SQL of its own against the store's tables.
 */
class ModuleBoundaryTest {
  private static final Pattern JDBC_INTERNAL = Pattern.compile("\\bdev\\.tether\\.jdbc\\.internal\\b");
  private static final Pattern STORE_SQL =
      Pattern.compile("(?i)\\b(SELECT|INSERT\\s+INTO|UPDATE|DELETE\\s+FROM)\\b[^\"]*\\b(tether_)?work_item(s|_checkpoints)\\b");

  private static Path mainSources() {
    Path base = Path.of(System.getProperty("basedir", System.getProperty("user.dir")));
    Path dir = base.resolve("src/main/java");
    assertThat(dir).as("the CLI's main sources (run from the tether-cli module)").isDirectory();
    return dir;
  }

  private static List<String> offending(Pattern pattern) throws IOException {
    List<String> out = new ArrayList<>();
    int files = 0;
    try (Stream<Path> s = Files.walk(mainSources())) {
      for (Path p : (Iterable<Path>) s.filter(f -> f.toString().endsWith(".java"))::iterator) {
        files++;
        List<String> lines = Files.readAllLines(p, StandardCharsets.UTF_8);
        for (int i = 0; i < lines.size(); i++) {
          Matcher m = pattern.matcher(lines.get(i));
          if (m.find()) {
            out.add(p.getFileName() + ":" + (i + 1) + ": " + lines.get(i).strip());
          }
        }
      }
    }
    assertThat(files).as("Java files scanned").isGreaterThan(20);
    return out;
  }

  @Test
  void noMainSourceUsesTheJdbcInternalPackage() throws IOException {
    assertThat(offending(JDBC_INTERNAL))
        .as("CLI main sources naming dev.tether.jdbc.internal (use the public dev.tether.jdbc API)")
        .isEmpty();
  }

  @Test
  void noMainSourceRunsItsOwnSqlOnTheStoreTables() throws IOException {
    assertThat(offending(STORE_SQL))
        .as("CLI main sources with SQL on tether_work_items/tether_work_item_checkpoints (add it to tether-jdbc's API)")
        .isEmpty();
  }

  @Test
  void theDetectorsRecogniseWhatTheyForbid() {
    assertThat(JDBC_INTERNAL.matcher("import dev.tether.jdbc.internal.Dialect;").find()).isTrue();
    assertThat(JDBC_INTERNAL.matcher("Dialect d = dev.tether.jdbc.internal.Dialect.SQLITE;").find()).isTrue();
    assertThat(JDBC_INTERNAL.matcher("import dev.tether.jdbc.QueueMonitor;").find()).isFalse();
    assertThat(STORE_SQL.matcher("\"SELECT id, queue FROM tether_work_items WHERE 1 = 1\"").find()).isTrue();
    assertThat(STORE_SQL.matcher("\"DELETE FROM tether_work_item_checkpoints WHERE item_id IN\"").find()).isTrue();
    assertThat(STORE_SQL.matcher("// updates rows in place").find()).isFalse();
  }
}
