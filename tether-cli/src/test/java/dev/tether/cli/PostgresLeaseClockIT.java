package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.jdbc.PostgresTestSchema;
import dev.tether.jdbc.TcpProxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.LocalTime;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Lease decisions of real {@code tether worker} processes on a shared PostgreSQL, against the two
 * failures a worker's own view of time invites:
 *
 * <ul>
 *   <li>a worker partitioned from the database (its connections go through a {@link TcpProxy}
 *       that the test freezes) stops its command by itself before another worker can take the
 *       item over;
 *   <li>a worker whose wall clock is ten minutes off (libfaketime, Debian's package {@code
 *       faketime}, preloaded into its JVM) neither loses its lease early nor keeps it late: every
 *       expiry is on the database's clock.
 * </ul>
 */
@Timeout(240)
class PostgresLeaseClockIT {
  /** Debian's libfaketime; {@code src/test/scripts/ensure-debian-packages.sh} installs it before the ITs. */
  static final Path LIBFAKETIME = Path.of(System.getProperty("tether.libfaketime",
      "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"));

  /** Lease 4 s, extended by 3 s at most every 500 ms, kill grace 1 s. */
  private static final List<String> FAST = List.of(
    "--concurrency", "1", "--visibility", "4s", "--extend-every", "500ms", "--extension", "3s",
    "--kill-grace", "1s", "--sweep-every", "1s");

  @TempDir Path dir;
  private final PostgresTestSchema schema = new PostgresTestSchema("tether_cli_");
  private JarRunner.Proc[] procs = new JarRunner.Proc[0];

  @AfterEach
  void tearDown() throws Exception {
    try {
      for (JarRunner.Proc p : procs) {
        if (p != null && p.process.isAlive()) {
          JarRunner.kill9(p);
        }
        if (p != null) {
          p.process.waitFor(30, java.util.concurrent.TimeUnit.SECONDS);
          removeFaketimeFiles(p.process.pid());
        }
      }
    } finally {
      schema.close();
    }
  }

  /**
   * Removes the shared-memory segment and semaphore libfaketime made for a worker started under
   * it. libfaketime 0.9.10 makes them in the first process it is preloaded in (the worker's JVM:
   * {@code env} only sets {@code LD_PRELOAD} for it), named after that process's id, and removes
   * them only when that process exits normally; the test kills the skewed worker with SIGKILL, so
   * without this each one left two files in /dev/shm. The worker's commands share them. A file
   * that cannot be removed is left, with a note: it is not a test's failure.
   */
  private static void removeFaketimeFiles(long pid) {
    for (String name : List.of("faketime_shm_" + pid, "sem.faketime_sem_" + pid)) {
      try {
        Files.deleteIfExists(Path.of("/dev/shm", name));
      } catch (java.io.IOException | RuntimeException e) {
        System.err.println("could not remove /dev/shm/" + name + ": " + e);
      }
    }
  }

  private void track(JarRunner.Proc... p) {
    JarRunner.Proc[] all = java.util.Arrays.copyOf(procs, procs.length + p.length);
    System.arraycopy(p, 0, all, procs.length, p.length);
    procs = all;
  }

  private static String[] worker(String... extra) {
    return JarRunner.worker(FAST, extra);
  }

  private <T> T query(String sql, long id, SqlFunction<T> read) throws SQLException {
    try (Connection c = DriverManager.getConnection(schema.url());
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? read.apply(rs) : null;
      }
    }
  }

  @FunctionalInterface
  private interface SqlFunction<T> {
    T apply(ResultSet rs) throws SQLException;
  }

  private String status(long id) throws SQLException {
    return query("SELECT status FROM tether_work_items WHERE id = ?", id, rs -> rs.getString(1));
  }

  private int deliveries(long id) throws SQLException {
    Integer n = query("SELECT delivery_count FROM tether_work_items WHERE id = ?", id, rs -> rs.getInt(1));
    return n == null ? -1 : n;
  }

  /** Milliseconds from the database's now() to the item's lease expiry, or null without a lease. */
  private Long leaseLeftMillis(long id) throws SQLException {
    return query("SELECT (EXTRACT(EPOCH FROM (lease_expires_at - now())) * 1000)::bigint"
        + " FROM tether_work_items WHERE id = ? AND lease_expires_at IS NOT NULL", id, rs -> rs.getLong(1));
  }

  private java.sql.Timestamp expiry(long id) throws SQLException {
    return query("SELECT lease_expires_at FROM tether_work_items WHERE id = ?", id, rs -> rs.getTimestamp(1));
  }

  private static long id(String out) {
    return Long.parseLong(out.strip());
  }

  @Test
  void aWorkerPartitionedFromTheDatabaseStopsItsCommandBeforeAnotherWorkerTakesTheItemOver()
      throws Exception {
    try (TcpProxy proxy = new TcpProxy(schema.url())) {
      JarRunner partitioned = new JarRunner(dir, proxy.url(schema.url()));
      JarRunner healthy = new JarRunner(dir, schema.url());
      Path pid = dir.resolve("first.pid");
      Path seen = dir.resolve("seen");
      // delivery 1 prints forever (every line a beat) under its shell's pid; a later delivery
      // records whether that process is still alive when it starts
      long id = id(healthy.run("enqueue", "--", "sh", "-c",
          "if [ \"$TETHER_DELIVERY\" = 1 ]; then echo $$ > '" + pid + "';"
              + " exec sh -c 'while true; do echo tick; sleep 0.2; done'; fi;"
              + " if kill -0 \"$(cat '" + pid + "')\" 2>/dev/null; then echo ALIVE > '" + seen + "';"
              + " else echo GONE > '" + seen + "'; fi"));
      JarRunner.Proc a = partitioned.start(worker());
      track(a);
      await().atMost(Duration.ofSeconds(30)).until(() -> Files.exists(pid) && Files.size(pid) > 1);
      long first = Long.parseLong(Files.readString(pid).strip());
      // a healthy holder: its extensions move the expiry
      await().atMost(Duration.ofSeconds(20)).until(() -> "in_progress".equals(status(id)));
      java.sql.Timestamp before = expiry(id);
      await().atMost(Duration.ofSeconds(20)).until(() -> expiry(id).after(before));
      JarRunner.Proc b = healthy.start(worker());
      track(b);

      proxy.freeze(); // the partition: the worker's calls hang, nothing comes back

      await().atMost(Duration.ofSeconds(30)).until(() -> "completed".equals(status(id)));
      assertThat(Files.readString(seen).strip())
          .as("the first delivery's command was gone when the second one started").isEqualTo("GONE");
      assertThat(ProcessHandle.of(first).map(ProcessHandle::isAlive).orElse(false)).isFalse();
      assertThat(deliveries(id)).isEqualTo(2);
      assertThat(a.err()).contains("stopping its command now, so that it is gone before another"
          + " worker can take the item over");

      proxy.restore(); // the partition heals: the first worker's delivery stays lost
      assertThat(status(id)).isEqualTo("completed");
      assertThat(deliveries(id)).isEqualTo(2);
    }
  }

  /** The time of a worker's first log line (simplelogger's HH:mm:ss.SSS). */
  private static LocalTime firstLogTime(JarRunner.Proc p) {
    Matcher m = Pattern.compile("^(\\d\\d:\\d\\d:\\d\\d\\.\\d\\d\\d) ", Pattern.MULTILINE).matcher(p.err());
    return m.find() ? LocalTime.parse(m.group(1)) : null;
  }

  @ParameterizedTest(name = "worker clock {0}")
  @ValueSource(strings = {"+10m", "-10m"})
  void aWorkerWhoseClockIsTenMinutesOffNeitherLosesItsLeaseEarlyNorKeepsItLate(String offset)
      throws Exception {
    assertThat(Files.isReadable(LIBFAKETIME)).as("%s is missing: install Debian's package faketime"
        + " (as root: apt-get update && apt-get install -y faketime), or run"
        + " tether-cli/src/test/scripts/ensure-debian-packages.sh", LIBFAKETIME).isTrue();
    JarRunner t = new JarRunner(dir, schema.url());
    Path started = dir.resolve("started");
    long id = id(t.run("enqueue", "--", "sh", "-c",
        "if [ \"$TETHER_DELIVERY\" -gt 1 ]; then echo resumed; exit 0; fi; touch '" + started + "';"
            + " while true; do echo tick; sleep 0.2; done"));
    JarRunner.Proc skewed = t.startWith(List.of("env", "LD_PRELOAD=" + LIBFAKETIME,
        "FAKETIME=" + offset, "FAKETIME_DONT_FAKE_MONOTONIC=1",
        // without this, libfaketime 0.9.10 stalls the JVM's timed waits (16 s to start it here)
        "FAKETIME_FORCE_MONOTONIC_FIX=0"), worker());
    track(skewed);
    await().atMost(Duration.ofSeconds(30)).until(() -> Files.exists(started));
    LocalTime logged = firstLogTime(skewed);
    assertThat(logged).as("a log line with a time: %s", skewed.err()).isNotNull();
    long skewMinutes = Math.abs(Duration.between(LocalTime.now(), logged).toMinutes());
    assertThat(Math.min(skewMinutes, 24 * 60 - skewMinutes))
        .as("the worker's clock is shifted (first log line at %s)", logged).isBetween(9L, 11L);

    // a healthy worker polls the same queue: it would take the item if the lease ran out early
    JarRunner.Proc other = t.start(worker());
    track(other);
    // three lease lengths: the lease is kept, and each expiry is a few seconds from the
    // database's now, not ten minutes off it
    await().during(Duration.ofSeconds(12)).atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(250))
        .until(() -> {
          Long left = leaseLeftMillis(id);
          return deliveries(id) == 1 && "in_progress".equals(status(id))
              && left != null && left > 0 && left <= 4_000 + 500;
        });

    JarRunner.kill9(skewed); // its lease now runs out on the database's clock, not ten minutes later
    long killed = System.nanoTime();
    await().atMost(Duration.ofSeconds(60)).until(() -> "completed".equals(status(id)));
    long tookMs = (System.nanoTime() - killed) / 1_000_000;
    assertThat(deliveries(id)).isEqualTo(2);
    assertThat(tookMs).as("taken over after the lease ran out, not ten minutes later").isLessThan(60_000);
    System.out.printf("clock %s: the item completed on another worker %d ms after the skewed one was"
        + " killed (lease 4 s)%n", offset, tookMs);
    JarRunner.term(other);
    assertThat(other.waitFor(30)).isZero();
  }
}
