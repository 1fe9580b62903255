package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The TETHER_CLI launcher lives in one private directory per installation and user: a worker
 * ended by SIGKILL left a temporary directory of its own behind every time.
 */
class ChildAccessTest {
  private static final String SCRIPT = "#!/bin/sh\nexec java -cp /opt/tether.jar dev.tether.cli.TetherCli \"$@\"\n";

  @TempDir Path tmp;

  @Test
  void workersOfOneInstallationShareOneLauncher() throws Exception {
    Path first = ChildAccess.sharedLauncher(tmp, SCRIPT);
    Path second = ChildAccess.sharedLauncher(tmp, SCRIPT);
    assertThat(first).isEqualTo(second);
    assertThat(Files.readString(first, StandardCharsets.UTF_8)).isEqualTo(SCRIPT);
    assertThat(Files.getPosixFilePermissions(first)).isEqualTo(PosixFilePermissions.fromString("rwx------"));
    assertThat(Files.getPosixFilePermissions(first.getParent()))
        .isEqualTo(PosixFilePermissions.fromString("rwx------"));
    assertThat(tmp.toFile().list()).as("one directory, no leftovers").hasSize(1);
    Path other = ChildAccess.sharedLauncher(tmp, SCRIPT.replace("/opt", "/srv"));
    assertThat(other.getParent()).as("another installation").isNotEqualTo(first.getParent());
  }

  @Test
  void theWorkersSchemaOptionIsTheChildsCurrentSchema() {
    assertThat(ChildAccess.withCurrentSchema("jdbc:postgresql://h/db", "jobs"))
        .isEqualTo("jdbc:postgresql://h/db?currentSchema=jobs");
    assertThat(ChildAccess.withCurrentSchema("jdbc:postgresql://h/db?user=u&currentSchema=other&ssl=true", "jobs"))
        .isEqualTo("jdbc:postgresql://h/db?user=u&ssl=true&currentSchema=jobs");
    assertThat(ChildAccess.withCurrentSchema("jdbc:postgresql://h/db?currentschema=x", "jobs"))
        .isEqualTo("jdbc:postgresql://h/db?currentSchema=jobs");
  }

  @Test
  void aLauncherThatWasChangedIsWrittenAgain() throws Exception {
    Path launcher = ChildAccess.sharedLauncher(tmp, SCRIPT);
    Files.writeString(launcher, "#!/bin/sh\necho somebody else's\n");
    assertThat(ChildAccess.sharedLauncher(tmp, SCRIPT)).isEqualTo(launcher);
    assertThat(Files.readString(launcher, StandardCharsets.UTF_8)).isEqualTo(SCRIPT);
  }

  @Test
  void aLauncherIsCheckedAgainOnEveryUse() throws Exception {
    // a running worker's launcher may be removed by a clean-up of the temporary directory, and
    // somebody else's put in its place
    Path launcher = ChildAccess.sharedLauncher(tmp, SCRIPT);
    assertThat(ChildAccess.intact(launcher, SCRIPT)).isTrue();
    Files.writeString(launcher, "#!/bin/sh\necho somebody else's\n");
    assertThat(ChildAccess.intact(launcher, SCRIPT)).isFalse();
    Files.delete(launcher);
    assertThat(ChildAccess.intact(launcher, SCRIPT)).isFalse();
    ChildAccess.sharedLauncher(tmp, SCRIPT);
    Files.setPosixFilePermissions(launcher.getParent(), PosixFilePermissions.fromString("rwxrwx---"));
    assertThat(ChildAccess.intact(launcher, SCRIPT)).as("a directory others may write to").isFalse();
  }

  @Test
  void aWorkersLauncherComesBackWhenItWasRemoved() throws Exception {
    ChildAccess access = ChildAccess.of(StoreLocation.of(tmp.resolve("t.db").toString(), null, null), null);
    Path launcher = Path.of(access.environment().get("TETHER_CLI"));
    Files.delete(launcher);
    assertThat(Path.of(access.environment().get("TETHER_CLI"))).isRegularFile().isExecutable();
  }

  @Test
  void aDirectoryOthersMayWriteToOrALinkIsNotUsed() throws Exception {
    Path launcher = ChildAccess.sharedLauncher(tmp, SCRIPT);
    Path dir = launcher.getParent();
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
    assertThat(ChildAccess.sharedLauncher(tmp, SCRIPT)).isNull();
    Files.delete(launcher);
    Files.delete(dir);
    Path elsewhere = Files.createDirectory(tmp.resolve("elsewhere"),
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    Files.createSymbolicLink(dir, elsewhere);
    assertThat(ChildAccess.sharedLauncher(tmp, SCRIPT)).isNull();
    assertThat(elsewhere.toFile().list()).as("nothing written through the link").isEmpty();
  }
}
