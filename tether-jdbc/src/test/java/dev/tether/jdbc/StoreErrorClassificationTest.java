package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.SQLException;
import org.junit.jupiter.api.Test;

/** Which database errors the store reports as transient ({@link StoreUnavailableException}). */
class StoreErrorClassificationTest {
  private final StoreEngine postgres = new PostgresEngine(TetherStoreConfig.defaults());
  @Test
  void serverShutdownAndStartupAreTransientLikeConnectionErrors() {
    // Seen when PostgreSQL was restarted under running workers (docs/RELIABILITY.md).
    for (String state : new String[] {"57P01", "57P02", "57P03", "08006", "08001"}) {
      assertThat(StoreErrors.translate(postgres, "acquiring", new SQLException("FATAL: ...", state)))
          .as(state).isInstanceOf(StoreUnavailableException.class)
          .hasMessageContaining(state).hasMessageContaining("retry with backoff");
    }
  }

  @Test
  void constraintAndSyntaxErrorsAreNotTransient() {
    for (String state : new String[] {"23505", "42601", "22001", "57014"}) {
      assertThat(StoreErrors.translate(postgres, "enqueueing", new SQLException("ERROR: ...", state)))
          .as(state).isNotInstanceOf(StoreUnavailableException.class).isInstanceOf(TetherStoreException.class);
    }
  }
}
