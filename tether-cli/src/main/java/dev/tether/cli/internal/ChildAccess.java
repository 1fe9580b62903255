package dev.tether.cli.internal;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * What a command run by {@code tether worker} needs to take part in its item's lease: {@code
 * TETHER_CLI}, the absolute path of an executable that accepts {@code tether}'s arguments (a
 * launcher script running this very installation's Java and class path, written once into a
 * private temporary directory), and {@code TETHER_DB}, the worker's store (an SQLite file as an
 * absolute path, a PostgreSQL URL with its password as a parameter: the environment is private to
 * the process and its descendants, and nothing prints it unmasked).
 *
 * <p>Thread-safe; the launcher is written on first use and deleted when the JVM exits.
 */
public final class ChildAccess {
  private final String db;
  private final Object lock = new Object();
  private Path launcher; // guarded by lock

  private ChildAccess(String db) {
    this.db = db;
  }

  /**
   * Returns the access to the store at {@code location}.
   *
   * @param location the worker's store
   * @return the access
   */
  public static ChildAccess of(StoreLocation location) {
    Objects.requireNonNull(location, "location");
    return new ChildAccess(childDb(location));
  }

  /**
   * Returns the environment variables for a child: {@code TETHER_CLI} and {@code TETHER_DB}.
   *
   * @return the variables
   * @throws UncheckedIOException if the launcher cannot be written
   */
  public Map<String, String> environment() {
    return Map.of("TETHER_CLI", launcher().toString(), "TETHER_DB", db);
  }

  /** The location a process in another working directory opens the same store with. */
  static String childDb(StoreLocation location) {
    String url = location.openUrl();
    String lower = url.toLowerCase(Locale.ROOT);
    if (lower.startsWith("jdbc:") && !lower.startsWith("jdbc:sqlite:")) {
      return url; // a server database: the same URL from anywhere
    }
    String file = lower.startsWith("jdbc:sqlite:") ? url.substring("jdbc:sqlite:".length()) : url;
    if (file.startsWith("file:") || file.contains("?") || file.isEmpty()) {
      return url; // a URL form the child opens as given
    }
    return Path.of(file).toAbsolutePath().normalize().toString();
  }

  /** The launcher, written on first use. */
  Path launcher() {
    synchronized (lock) {
      if (launcher == null) {
        launcher = writeLauncher();
      }
      return launcher;
    }
  }

  private static Path writeLauncher() {
    String java = ProcessHandle.current().info().command()
        .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    String classPath = Path.of(".").toAbsolutePath().normalize().toString();
    StringBuilder cp = new StringBuilder();
    for (String part : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (part.isEmpty()) {
        continue;
      }
      if (cp.length() > 0) {
        cp.append(File.pathSeparator);
      }
      cp.append(Path.of(classPath).resolve(part).normalize());
    }
    String script = "#!/bin/sh\n"
        + "# Written by tether worker: runs this installation's tether for its commands.\n"
        + "exec " + quote(java) + " -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto"
        + " -cp " + quote(cp.toString()) + " dev.tether.cli.TetherCli \"$@\"\n";
    try {
      Path dir = Files.createTempDirectory("tether-cli-",
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      dir.toFile().deleteOnExit();
      Path file = dir.resolve("tether");
      Files.writeString(file, script, StandardCharsets.UTF_8);
      file.toFile().deleteOnExit(); // deleted before its directory (reverse order)
      Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwx------"));
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the TETHER_CLI launcher into a temporary"
          + " directory (" + System.getProperty("java.io.tmpdir") + "): " + e.getMessage(), e);
    }
  }

  /** Quotes a word for sh: single quotes, each embedded one as '\''. */
  static String quote(String word) {
    return "'" + word.replace("'", "'\\''") + "'";
  }
}
