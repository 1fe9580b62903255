package dev.tether.spring.autoconfigure;

import dev.tether.jdbc.TetherStore;
import java.util.Set;
import org.springframework.boot.sql.init.dependency.AbstractBeansOfTypeDependsOnDatabaseInitializationDetector;

/**
 * Makes every {@link TetherStore} bean wait for the application's database initialization
 * (Flyway, Liquibase, {@code spring.sql.init} scripts): the store creates or validates its tables
 * when it opens, which must come after the application's own migrations, so that a migration
 * tool finds the schema as it left it (Flyway refuses a non-empty schema without its history) and
 * tables that the migrations create for Tether exist when {@code tether.store.migrate=validate}
 * checks them. Spring Boot finds it through {@code META-INF/spring.factories}.
 */
public final class TetherStoreDatabaseInitializationDetector
    extends AbstractBeansOfTypeDependsOnDatabaseInitializationDetector {

  /** Creates the detector (Spring Boot does). */
  public TetherStoreDatabaseInitializationDetector() {}

  @Override
  protected Set<Class<?>> getDependsOnDatabaseInitializationBeanTypes() {
    return Set.of(TetherStore.class);
  }
}
