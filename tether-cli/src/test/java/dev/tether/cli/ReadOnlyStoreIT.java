package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * An SQLite store file that the worker's user may not write. SQLite opens such a file read-only
 * without complaint and then fails every write, so a worker would log one error with a stack trace
 * per loop per second forever; {@code tether worker} refuses it at start with one line and exit
 * status 1, and works once the file is writable again.
 *
 * <p>File permissions do not bind root, so when the build runs as root the CLI processes run as
 * {@code nobody} through {@code setpriv} (skipped, with a message, when that is impossible).
 */
@Timeout(90)
class ReadOnlyStoreIT {
  @TempDir Path dir;

  private List<String> asUnprivilegedUser() throws Exception {
    if (!"root".equals(System.getProperty("user.name"))) {
      return List.of();
    }
    Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/setpriv")),
        "running as root without /usr/bin/setpriv: file permissions cannot be tested; skipped");
    // nobody must reach the temporary directory and the jar
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
    return List.of("/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups");
  }

  @Test
  void workerRefusesAReadOnlyStoreFileWithOneLineAndWorksOnceItIsWritable() throws Exception {
    List<String> as = asUnprivilegedUser();
    JarRunner t = new JarRunner(dir);
    Path store = dir.resolve("store");
    Files.createDirectories(store);
    Files.setPosixFilePermissions(store, PosixFilePermissions.fromString("rwxrwxrwx"));
    Path db = store.resolve("ro.db");
    JarRunner.Proc enqueue = t.startWith(as, "enqueue", "--db", db.toString(), "--", "sh", "-c", "echo ok");
    assertThat(enqueue.waitFor(60)).as(enqueue.err()).isZero();
    long id = Long.parseLong(enqueue.out().strip());

    Files.setPosixFilePermissions(db, PosixFilePermissions.fromString("r--r--r--"));
    String[] worker = JarRunner.shortLeaseWorker("--db", db.toString());
    JarRunner.Proc refused = t.startWith(as, worker);
    assertThat(refused.waitFor(30)).isEqualTo(1);
    String err = refused.err();
    assertThat(err.strip()).startsWith("tether worker: error: " + db + " is read-only for this process");
    assertThat(err.strip().lines().count()).as(err).isEqualTo(1);

    Files.setPosixFilePermissions(db, PosixFilePermissions.fromString("rw-r--r--"));
    JarRunner.Proc w = t.startWith(as, worker);
    try {
      await().atMost(Duration.ofSeconds(30)).until(() -> "completed".equals(t.column(db, id, "status")));
    } finally {
      JarRunner.term(w);
      w.waitFor(20);
    }
    assertThat(Files.readString(w.err, StandardCharsets.UTF_8)).doesNotContain("SQLITE_READONLY");
  }
}
