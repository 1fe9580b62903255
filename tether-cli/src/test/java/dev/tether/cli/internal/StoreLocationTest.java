package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where a --db password comes from, what the store is opened on, and what may be printed. */
class StoreLocationTest {
  @TempDir Path dir;

  /** The properties the PostgreSQL driver itself reads from a URL. */
  private static Properties driverSees(String url) {
    Properties p = org.postgresql.Driver.parseURL(url, new Properties());
    assertThat(p).as("the driver accepts %s", url).isNotNull();
    return p;
  }

  @Test
  void maskHidesPasswordParametersAndUserinfoPasswordsAndNothingElse() {
    assertThat(StoreLocation.mask("jdbc:postgresql://h:5432/db?user=u&password=s3cret&ssl=true"))
        .isEqualTo("jdbc:postgresql://h:5432/db?user=u&password=***&ssl=true");
    assertThat(StoreLocation.mask("jdbc:postgresql://h/db?PASSWORD=s3cret"))
        .isEqualTo("jdbc:postgresql://h/db?PASSWORD=***");
    assertThat(StoreLocation.mask("cannot open --db jdbc:postgresql://h/db?password=s3cret: refused"))
        .isEqualTo("cannot open --db jdbc:postgresql://h/db?password=***: refused");
    assertThat(StoreLocation.mask("unsupported --db 'postgres://u:s3cret@h/db': give"))
        .isEqualTo("unsupported --db 'postgres://u:***@h/db': give");
    assertThat(StoreLocation.mask("jdbc:postgresql://u:p@ss:w0rd@h:5432/db"))
        .isEqualTo("jdbc:postgresql://u:***@h:5432/db");
    assertThat(StoreLocation.mask("jdbc:postgresql://:s3cret@h/db")).isEqualTo("jdbc:postgresql://:***@h/db");
    // a password with a colon, after which a message goes on
    assertThat(StoreLocation.mask("on jdbc:postgresql://h/db?password=a:b;c: Failed"))
        .isEqualTo("on jdbc:postgresql://h/db?password=***: Failed");
    // nothing to mask
    for (String plain : new String[] {
        "jdbc:postgresql://127.0.0.1:5432/db?user=u", "./tether.db", "jdbc:sqlite:/tmp/x.db",
        "mail me at ops@example.com", "http://127.0.0.1:8080/health/ready", "", "password: none"}) {
      assertThat(StoreLocation.mask(plain)).isEqualTo(plain);
    }
    assertThat(StoreLocation.mask(null)).isNull();
  }

  @Test
  void sqliteLocationsAreOpenedAsGiven() {
    StoreLocation l = StoreLocation.of("./tether.db", null, "from-env");
    assertThat(l.openUrl()).isEqualTo("./tether.db");
    assertThat(l.display()).isEqualTo("./tether.db");
  }

  @Test
  void passwordParameterStaysInTheUrlAndIsMaskedInTheDisplay() {
    StoreLocation l = StoreLocation.of("jdbc:postgresql://h/db?user=u&password=s3cret", null, "env-pw");
    assertThat(driverSees(l.openUrl()).getProperty("password")).isEqualTo("s3cret");
    assertThat(l.display()).isEqualTo("jdbc:postgresql://h/db?user=u&password=***");
    assertThat(l.toString()).doesNotContain("s3cret");
  }

  @Test
  void userinfoBecomesParametersTheDriverReads() {
    StoreLocation l = StoreLocation.of("jdbc:postgresql://tether:p%40ss+w%3Ard@db.internal:5433/q?ssl=false", null, null);
    Properties p = driverSees(l.openUrl());
    assertThat(p.getProperty("user")).isEqualTo("tether");
    assertThat(p.getProperty("password")).isEqualTo("p@ss+w:rd");
    assertThat(p.getProperty("PGHOST")).isEqualTo("db.internal");
    assertThat(p.getProperty("PGPORT")).isEqualTo("5433");
    assertThat(p.getProperty("PGDBNAME")).isEqualTo("q");
    assertThat(l.display()).isEqualTo("jdbc:postgresql://tether:***@db.internal:5433/q?ssl=false");
    assertThat(l.openUrl()).doesNotContain("@");
  }

  @Test
  void passwordFileGivesThePasswordWithoutItsTrailingLineBreak() throws Exception {
    Path f = dir.resolve("pw");
    String tricky = "a&b c+d%e=f:g@h/é";
    Files.writeString(f, tricky + "\r\n", StandardCharsets.UTF_8);
    StoreLocation l = StoreLocation.of("jdbc:postgresql://h/db?user=u", f, "env-pw");
    assertThat(driverSees(l.openUrl()).getProperty("password")).isEqualTo(tricky);
    assertThat(driverSees(l.openUrl()).getProperty("user")).isEqualTo("u");
    assertThat(l.display()).isEqualTo("jdbc:postgresql://h/db?user=u");
    assertThat(StoreLocation.mask(l.openUrl())).doesNotContain("a&b").doesNotContain("é").endsWith("password=***");
  }

  @Test
  void pgpasswordIsUsedOnlyWhenNothingElseGivesAPassword() {
    assertThat(driverSees(StoreLocation.of("jdbc:postgresql://h/db?user=u", null, "env-pw").openUrl())
        .getProperty("password")).isEqualTo("env-pw");
    assertThat(driverSees(StoreLocation.of("jdbc:postgresql://h/db?password=url-pw", null, "env-pw").openUrl())
        .getProperty("password")).isEqualTo("url-pw");
    assertThat(driverSees(StoreLocation.of("jdbc:postgresql://u:info-pw@h/db", null, "env-pw").openUrl())
        .getProperty("password")).isEqualTo("info-pw");
    assertThat(driverSees(StoreLocation.of("jdbc:postgresql://h/db", null, "").openUrl())
        .getProperty("password")).isNull();
    assertThat(driverSees(StoreLocation.of("jdbc:postgresql://h/db", null, null).openUrl())
        .getProperty("password")).isNull();
  }

  @Test
  void contradictionsAreRefusedWithoutShowingThePassword() throws Exception {
    Path f = dir.resolve("pw");
    Files.writeString(f, "file-pw");
    assertThatThrownBy(() -> StoreLocation.of("jdbc:postgresql://h/db?password=s3cret", f, null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("keep one").hasMessageNotContaining("s3cret");
    assertThatThrownBy(() -> StoreLocation.of("jdbc:postgresql://u:s3cret@h/db", f, null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageNotContaining("s3cret");
    assertThatThrownBy(() -> StoreLocation.of("jdbc:postgresql://u:s3cret@h/db?password=other", null, null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageNotContaining("s3cret");
    assertThatThrownBy(() -> StoreLocation.of("jdbc:postgresql://u@h/db?user=v", null, null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("user twice");
    assertThatThrownBy(() -> StoreLocation.of("./tether.db", f, null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PostgreSQL");
  }

  @Test
  void unreadableOrEmptyPasswordFileIsAStoreError() throws Exception {
    assertThatThrownBy(() -> StoreLocation.of("jdbc:postgresql://h/db", dir.resolve("missing"), null))
        .isInstanceOf(Stores.BadStoreException.class).hasMessageContaining("no such file");
    Path empty = dir.resolve("empty");
    Files.writeString(empty, "\n");
    assertThatThrownBy(() -> StoreLocation.of("jdbc:postgresql://h/db", empty, null))
        .isInstanceOf(Stores.BadStoreException.class).hasMessageContaining("is empty");
  }
}
