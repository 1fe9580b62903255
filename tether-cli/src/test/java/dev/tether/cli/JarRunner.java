package dev.tether.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs the real shaded jar as separate processes, for end-to-end tests. */
final class JarRunner {
  static final Path JAR = Path.of(System.getProperty("tether.jar", "target/tether.jar")).toAbsolutePath();

  /**
   * Worker options for short leases within the worker's calibration rules, for tests that need a
   * lost lease redelivered within seconds: a 5 s lease, extended 4 s ahead at most every 500 ms, a
   * 1 s kill grace, a sweep every second. A command is stopped once its lease may run out within
   * --kill-grace + 0.5 s, which here takes 2.5 s without a confirmed extension. With 2 s
   * extensions the worker warned that the kill grace was long and capped that margin, so a worker
   * starved 1.25 s on a loaded machine could stop a healthy command.
   */
  private static final List<String> SHORT_LEASES = List.of("--visibility", "5s", "--extend-every",
      "500ms", "--extension", "4s", "--kill-grace", "1s", "--sweep-every", "1s");

  /** {@code tether worker} with {@link #SHORT_LEASES short leases}, then {@code options}. */
  static String[] shortLeaseWorker(String... options) {
    return worker(SHORT_LEASES, options);
  }

  /** {@code tether worker} with {@code leaseOptions} (a test's own lease timing), then {@code options}. */
  static String[] worker(List<String> leaseOptions, String... options) {
    List<String> a = new ArrayList<>();
    a.add("worker");
    a.addAll(leaseOptions);
    a.addAll(List.of(options));
    return a.toArray(new String[0]);
  }

  private final Path dir;
  private final Path db;
  private final String storeUrl;
  private int seq;

  JarRunner(Path dir) {
    this(dir, null);
  }

  /**
   * A runner whose processes use {@code storeUrl} (TETHER_DB) as their store, for example a
   * PostgreSQL JDBC URL; null means the SQLite file {@code dir/e2e.db}.
   */
  JarRunner(Path dir, String storeUrl) {
    this.dir = dir;
    this.db = dir.resolve("e2e.db");
    this.storeUrl = storeUrl == null ? db.toString() : storeUrl;
    if (!Files.isRegularFile(JAR)) {
      throw new IllegalStateException(JAR + " is missing: run 'mvn -B verify' (the jar is built in the package phase)");
    }
  }

  Path db() {
    return db;
  }

  /** The store every started process uses (TETHER_DB): the SQLite path or the given URL. */
  String storeUrl() {
    return storeUrl;
  }

  /** A started process with its output in files. */
  static final class Proc {
    final Process process;
    final Path out;
    final Path err;

    Proc(Process process, Path out, Path err) {
      this.process = process;
      this.out = out;
      this.err = err;
    }

    String out() {
      try {
        return Files.readString(out, StandardCharsets.UTF_8);
      } catch (IOException e) {
        return "";
      }
    }

    String err() {
      try {
        return Files.readString(err, StandardCharsets.UTF_8);
      } catch (IOException e) {
        return "";
      }
    }

    /** The last 60 lines of its stderr, for failure messages. */
    String errTail() {
      List<String> lines = err().lines().toList();
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 60), lines.size()));
    }

    int waitFor(long seconds) throws InterruptedException {
      if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new AssertionError("process did not end within " + seconds + "s; stderr: " + err());
      }
      return process.exitValue();
    }
  }

  Proc start(String... args) throws IOException {
    return startWith(List.of(), args);
  }

  /** Starts the jar behind a command prefix (for example {@code setpriv} to run as another user). */
  Proc startWith(List<String> prefix, String... args) throws IOException {
    List<String> cmd = new ArrayList<>(prefix);
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx256m");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-jar");
    cmd.add(JAR.toString());
    cmd.addAll(List.of(args));
    int n = ++seq;
    Path out = dir.resolve("p" + n + ".out");
    Path err = dir.resolve("p" + n + ".err");
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile());
    Map<String, String> env = pb.environment();
    env.put("TETHER_DB", storeUrl);
    env.remove("TETHER_TOKEN");
    pb.redirectOutput(out.toFile()).redirectError(err.toFile());
    return new Proc(pb.start(), out, err);
  }

  /** Runs a command to its end (max 60 s) and returns its stdout; fails on a non-zero exit. */
  String run(String... args) throws IOException, InterruptedException {
    Proc p = start(args);
    int code = p.waitFor(60);
    if (code != 0) {
      throw new AssertionError("tether " + String.join(" ", args) + " exited " + code + ": " + p.err());
    }
    return p.out();
  }

  /** Reads one column of one item straight from the store. */
  String column(long id, String column) throws SQLException {
    return column(db, id, column);
  }

  /** Reads one column of one item straight from the store in {@code db}; null while it is locked. */
  String column(Path db, long id, String column) throws SQLException {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db);
        PreparedStatement ps = c.prepareStatement("SELECT " + column + " FROM tether_work_items WHERE id = ?")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getString(1) : null;
      }
    } catch (SQLException e) {
      if (String.valueOf(e.getMessage()).contains("BUSY") || String.valueOf(e.getMessage()).contains("locked")) {
        return null; // a writer holds the lock: the caller polls again
      }
      throw e;
    }
  }

  String status(long id) throws SQLException {
    return column(id, "status");
  }

  int deliveries(long id) throws SQLException {
    String v = column(id, "delivery_count");
    return v == null ? -1 : Integer.parseInt(v);
  }

  List<String> checkpointKinds(long id) throws SQLException {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db);
        PreparedStatement ps = c.prepareStatement("SELECT kind FROM tether_work_item_checkpoints WHERE item_id = ? ORDER BY id")) {
      ps.setLong(1, id);
      List<String> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getString(1));
        }
      }
      return out;
    }
  }

  /**
   * Waits until a started {@code worker} has printed its first line (its signal handlers are in
   * place from then on: SIGTERM earlier, while the JVM starts, ends it the JVM's way, 143).
   */
  static void awaitWorkerStarted(Proc p) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!p.out().startsWith("worker ") && p.process.isAlive() && System.nanoTime() - deadline < 0) {
      Thread.sleep(50);
    }
  }

  /** Sends SIGTERM. */
  static void term(Proc p) {
    p.process.destroy();
  }

  /** Sends SIGKILL. */
  static void kill9(Proc p) throws InterruptedException {
    p.process.destroyForcibly();
    p.process.waitFor(10, TimeUnit.SECONDS);
  }
}
