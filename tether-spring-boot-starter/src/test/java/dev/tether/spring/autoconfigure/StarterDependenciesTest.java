package dev.tether.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * What the starter puts on an application's classpath, read from its POM: the classpath of these
 * tests has Boot's JDBC support in test scope, so it cannot show what an application that adds
 * only the starter gets. Both rules come from a new user's first start of a Boot application with
 * nothing but the starter, web and Actuator.
 */
class StarterDependenciesTest {
  /** artifactId -> optional, for the POM's direct dependencies outside test scope. */
  private static final Map<String, Boolean> OPTIONAL = new HashMap<>();

  @BeforeAll
  static void readThePom() throws Exception {
    Path pom = Path.of("pom.xml");
    assertThat(pom).as("run from the starter's module directory").exists();
    var document = DocumentBuilderFactory.newInstance().newDocumentBuilder()
        .parse(Files.newInputStream(pom));
    Element dependencies = null;
    // the project's own <dependencies>, not those of <dependencyManagement>
    NodeList all = document.getDocumentElement().getChildNodes();
    for (int i = 0; i < all.getLength(); i++) {
      if (all.item(i) instanceof Element e && e.getTagName().equals("dependencies")) {
        dependencies = e;
      }
    }
    assertThat(dependencies).as("the POM's <dependencies>").isNotNull();
    NodeList list = dependencies.getElementsByTagName("dependency");
    for (int i = 0; i < list.getLength(); i++) {
      Element d = (Element) list.item(i);
      String scope = text(d, "scope");
      if (!"test".equals(scope)) {
        OPTIONAL.put(text(d, "artifactId"), "true".equals(text(d, "optional")));
      }
    }
  }

  private static String text(Element parent, String tag) {
    NodeList nodes = parent.getElementsByTagName(tag);
    return nodes.getLength() == 0 ? null : nodes.item(0).getTextContent().trim();
  }

  @Test
  void bootsDataSourceAutoConfigurationComesOnlyFromTheApplication() {
    // Non-optional, it made Boot configure a DataSource for an application without one, whose
    // start then failed ("Failed to determine a suitable driver class") instead of using
    // Tether's SQLite file as documented.
    assertThat(OPTIONAL).containsKey("spring-boot-jdbc");
    assertThat(OPTIONAL.get("spring-boot-jdbc"))
        .as("spring-boot-jdbc must be an optional dependency of the starter").isTrue();
  }

  @Test
  void theMetersComeWithTheStarter() {
    // Optional, /actuator/prometheus had no Tether meter until the application added
    // tether-micrometer itself, which the README does not ask for.
    assertThat(OPTIONAL).containsEntry("tether-micrometer", false);
  }

  @Test
  void bodiesAreJackson3AndJackson2ComesOnlyFromTheApplication() {
    // Spring Boot 4's JSON library is Jackson 3; a starter that brought Jackson 2 put a second
    // Jackson on every application's classpath and wrote bodies with a mapper of its own,
    // ignoring the application's spring.jackson.* settings and its JsonMapper.
    assertThat(OPTIONAL).containsEntry("tether-jackson3", false);
    assertThat(OPTIONAL).containsEntry("tether-jackson", true);
  }
}
