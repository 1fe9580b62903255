package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;

class TetherStoreConfigTest {
  @Test
  void toBuilderKeepsEverySettingAndChangesOnlyWhatIsSet() {
    Clock clock = Clock.fixed(Instant.parse("2026-11-27T12:00:00Z"), ZoneOffset.UTC);
    TetherStoreConfig set = TetherStoreConfig.builder()
        .clock(clock)
        .schema("jobs")
        .migration(TetherStoreConfig.SchemaMigration.VALIDATE)
        .busyTimeout(Duration.ofSeconds(7))
        .sqliteSynchronous(TetherStoreConfig.SqliteSynchronous.FULL)
        .maximumPoolSize(3)
        .connectionTimeout(Duration.ofSeconds(4))
        .groupCommit(false)
        .notifications(false)
        .retainBackendMemory(false)
        .build();
    TetherStoreConfig copy = set.toBuilder().build();
    // toString names every setting
    assertThat(copy).hasToString(set.toString());
    assertThat(copy.clock()).contains(clock);

    TetherStoreConfig changed = set.toBuilder().schema("other").build();
    assertThat(changed.schema()).contains("other");
    assertThat(changed.toString().replace("schema=other", "schema=jobs")).isEqualTo(set.toString());
    assertThat(TetherStoreConfig.defaults().toBuilder().build()).hasToString(TetherStoreConfig.defaults().toString());
  }
}
