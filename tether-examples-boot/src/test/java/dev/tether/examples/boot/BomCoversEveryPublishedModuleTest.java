package dev.tether.examples.boot;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * tether-bom names every module a user can depend on, at the project's version, so that a build
 * importing it never names a Tether version by hand; the modules that are never shipped are not
 * in it.
 */
class BomCoversEveryPublishedModuleTest {
  private static final Set<String> NEVER_SHIPPED =
      Set.of("tether-bench", "tether-examples", "tether-examples-boot", "tether-bom");

  private static Path root() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.exists(dir.resolve("tether-bom/pom.xml"))) {
      dir = dir.getParent();
    }
    assertThat(dir).as("the project's root, above " + Path.of("").toAbsolutePath()).isNotNull();
    return dir;
  }

  private static Set<String> all(Pattern p, String text) {
    Set<String> out = new TreeSet<>();
    Matcher m = p.matcher(text);
    while (m.find()) {
      out.add(m.group(1));
    }
    return out;
  }

  @Test
  void theBomListsEveryPublishedModuleAtTheProjectVersion() throws Exception {
    String parent = Files.readString(root().resolve("pom.xml"));
    String bom = Files.readString(root().resolve("tether-bom/pom.xml"));
    Set<String> published = all(Pattern.compile("<module>([^<]+)</module>"), parent);
    published.removeAll(NEVER_SHIPPED);
    Set<String> listed = all(Pattern.compile(
        "<artifactId>(tether-[^<]+)</artifactId>\\s*<version>\\$\\{project\\.version}</version>"), bom);
    assertThat(listed).isEqualTo(published);
    String parentVersion = all(Pattern.compile("<artifactId>tether-parent</artifactId>\\s*<version>([^<]+)</version>"),
        parent).iterator().next();
    assertThat(all(Pattern.compile("<artifactId>tether-bom</artifactId>\\s*<version>([^<]+)</version>"), bom))
        .containsExactly(parentVersion);
  }
}
