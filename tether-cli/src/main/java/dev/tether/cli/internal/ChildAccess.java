package dev.tether.cli.internal;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * What a command run by {@code tether worker} needs to take part in its item's lease: {@code
 * TETHER_CLI}, the absolute path of an executable that accepts {@code tether}'s arguments (a
 * launcher script running this very installation's Java and class path, written once into a
 * private temporary directory shared by this user's workers of this installation, see {@link
 * #sharedLauncher}), and {@code TETHER_DB}, the worker's store (an SQLite file as an
 * absolute path, a PostgreSQL URL with its password as a parameter: the environment is private to
 * the process and its descendants, and nothing prints it unmasked).
 *
 * <p>Thread-safe; the launcher is written on first use (or found written by another worker of
 * this installation) and kept.
 */
public final class ChildAccess {
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(ChildAccess.class);
  private final String db;
  private final Object lock = new Object();
  private Path launcher; // guarded by lock

  private ChildAccess(String db) {
    this.db = db;
  }

  /**
   * Returns the access to the store at {@code location} with Tether's tables in {@code schema}
   * (the worker's {@code --schema}): the child's {@code TETHER_DB} names that schema as its
   * {@code currentSchema}, whatever the URL said, as the worker's own connections use it.
   *
   * @param location the worker's store
   * @param schema the PostgreSQL schema, or null for the one the location names
   * @return the access
   */
  public static ChildAccess of(StoreLocation location, String schema) {
    Objects.requireNonNull(location, "location");
    String db = childDb(location);
    return new ChildAccess(schema == null ? db : withCurrentSchema(db, schema));
  }

  /** {@code url} with its {@code currentSchema} parameter, if any, replaced by {@code schema}. */
  static String withCurrentSchema(String url, String schema) {
    int q = url.indexOf('?');
    StringBuilder out = new StringBuilder(q < 0 ? url : url.substring(0, q));
    char sep = '?';
    if (q >= 0) {
      for (String param : url.substring(q + 1).split("&")) {
        if (param.isEmpty() || param.regionMatches(true, 0, "currentSchema=", 0, "currentSchema=".length())) {
          continue;
        }
        out.append(sep).append(param);
        sep = '&';
      }
    }
    return out.append(sep).append("currentSchema=").append(schema).toString();
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

  /**
   * The launcher, written on first use, and checked again at each command's start: it lives under
   * a directory everybody may write to, where a clean-up of old files ({@code systemd-tmpfiles},
   * an {@code rm -rf /tmp/tether-cli-*}) may remove it while the worker runs, and another user
   * could then put one of theirs at the same, predictable, place. A launcher found changed or gone
   * (or its directory no longer this user's private one) is written again before the command
   * starts. The check costs a stat and the read of a 200-byte file per command. It cannot cover a
   * command already running: removed and replaced while it runs, its later {@code
   * "$TETHER_CLI"} calls would run what was put there (as with the per-process directories
   * before; a temporary directory that others may write to and that is cleaned while workers run
   * is the risk).
   */
  Path launcher() {
    synchronized (lock) {
      if (launcher == null || !intact(launcher, Script.TEXT)) {
        if (launcher != null) {
          log.warn("The TETHER_CLI launcher {} changed or disappeared; writing it again", launcher);
        }
        launcher = writeLauncher(Script.TEXT);
      }
      return launcher;
    }
  }

  /** The launcher script of this installation, put together once, on first use. */
  private static final class Script {
    static final String TEXT = launcherScript();
  }

  /** Whether {@code file} still is {@code script}, in a private directory of this user's own. */
  static boolean intact(Path file, String script) {
    try {
      return Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS) && Files.isExecutable(file)
          && ownPrivateDirectory(file.getParent())
          && script.equals(Files.readString(file, StandardCharsets.UTF_8));
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  private static String launcherScript() {
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
    return "#!/bin/sh\n"
        + "# Written by tether worker: runs this installation's tether for its commands.\n"
        + "exec " + quote(java) + " -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto"
        + " -cp " + quote(cp.toString()) + " dev.tether.cli.TetherCli \"$@\"\n";
  }

  private static Path writeLauncher(String script) {
    Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
    try {
      Path shared = sharedLauncher(tmp, script);
      if (shared != null) {
        return shared;
      }
      Path dir = Files.createTempDirectory("tether-cli-", PRIVATE);
      dir.toFile().deleteOnExit();
      Path file = dir.resolve("tether");
      Files.writeString(file, script, StandardCharsets.UTF_8);
      file.toFile().deleteOnExit(); // deleted before its directory (reverse order)
      Files.setPosixFilePermissions(file, OWNER_ONLY);
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the TETHER_CLI launcher into a temporary"
          + " directory (" + tmp + "): " + e.getMessage(), e);
    }
  }

  /** Read, write and search (or run) for the owner alone. */
  private static final java.util.Set<PosixFilePermission> OWNER_ONLY =
      java.util.Set.copyOf(PosixFilePermissions.fromString("rwx------"));

  /** {@link #OWNER_ONLY} as the attribute a new directory or file is created with. */
  private static final java.nio.file.attribute.FileAttribute<java.util.Set<PosixFilePermission>>
      PRIVATE = PosixFilePermissions.asFileAttribute(OWNER_ONLY);

  /**
   * The launcher in a directory named after its content ({@code tether-cli-<user>-<hash>} in
   * {@code tmp}), written there once and shared by every worker of this installation and user:
   * a worker ended by SIGKILL (no exit hooks) left a directory of its own behind every time; now
   * there is one per installation, never deleted. Used only where the directory is this user's
   * own, private ({@code rwx------}) and not a link, so that nobody else can have put a launcher
   * of theirs there; null otherwise (or where the file system has no POSIX permissions), for a
   * private directory of this process's own.
   */
  static Path sharedLauncher(Path tmp, String script) throws IOException {
    String user = System.getProperty("user.name", "").replaceAll("[^A-Za-z0-9_.-]", "_");
    String hash;
    try {
      byte[] digest = java.security.MessageDigest.getInstance("SHA-256")
          .digest(script.getBytes(StandardCharsets.UTF_8));
      hash = java.util.HexFormat.of().formatHex(digest, 0, 8);
    } catch (java.security.NoSuchAlgorithmException e) {
      return null;
    }
    Path dir = tmp.resolve("tether-cli-" + user + "-" + hash);
    try {
      Files.createDirectory(dir, PRIVATE);
    } catch (FileAlreadyExistsException e) {
      // another worker of this installation made it (or somebody else did: checked below)
    } catch (UnsupportedOperationException e) {
      return null;
    }
    if (!ownPrivateDirectory(dir)) {
      log.warn("{} is not a private directory of this user: the TETHER_CLI launcher goes into a"
          + " directory of this process's own", dir);
      return null;
    }
    Path file = dir.resolve("tether");
    if (intact(file, script)) {
      return file;
    }
    // written aside and moved in whole: a worker starting meanwhile never runs half a script
    Path part = Files.createTempFile(dir, "tether-", ".part", PRIVATE);
    try {
      Files.writeString(part, script, StandardCharsets.UTF_8);
      Files.move(part, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } finally {
      Files.deleteIfExists(part);
    }
    return file;
  }

  /** Whether {@code dir} is a directory (not a link) owned by this process's user, {@code rwx------}. */
  private static boolean ownPrivateDirectory(Path dir) throws IOException {
    PosixFileAttributes a;
    try {
      a = Files.readAttributes(dir, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    } catch (UnsupportedOperationException e) {
      return false;
    }
    return a.isDirectory() && a.permissions().equals(OWNER_ONLY)
        && a.owner().equals(processOwner());
  }

  private static java.nio.file.attribute.UserPrincipal owner; // guarded by ChildAccess.class

  /** The user this process runs as, as the file system names owners (the owner of a new file). */
  private static synchronized java.nio.file.attribute.UserPrincipal processOwner() throws IOException {
    if (owner == null) {
      Path mine = Files.createTempFile("tether-cli-owner-", ".tmp");
      try {
        owner = Files.getOwner(mine);
      } finally {
        Files.deleteIfExists(mine);
      }
    }
    return owner;
  }

  /**
   * Quotes a word for sh: single quotes, each embedded one as {@code '\''}.
   *
   * @param word any text
   * @return the text as one shell word
   */
  public static String quote(String word) {
    return "'" + word.replace("'", "'\\''") + "'";
  }
}
