package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The release archive {@code tether-VERSION.tar.gz}, as an operator installs it: unpacked in a
 * temporary directory, {@code bin/tether} run with no build and no Maven, finding Java through
 * {@code JAVA_HOME} or {@code PATH}.
 */
@Timeout(120)
class DistributionIT {
  static final Path ARCHIVE =
      Path.of(System.getProperty("tether.dist", "target/tether-0.1.0-SNAPSHOT.tar.gz")).toAbsolutePath();
  private static final Path MODULE = Path.of(System.getProperty("basedir", System.getProperty("user.dir")));
  private static final String JAVA_HOME = System.getProperty("java.home");

  @TempDir Path dir;
  private Path home;

  record Run(int code, String out, String err) {}

  @BeforeEach
  void unpack() throws Exception {
    assertThat(ARCHIVE).as("the release archive (built by 'mvn package')").isRegularFile();
    assertThat(ARCHIVE.getFileName().toString()).matches("tether-0\\.1\\.0-SNAPSHOT\\.tar\\.gz");
    Run tar = run(List.of("tar", "-xzf", ARCHIVE.toString(), "-C", dir.toString()), Map.of());
    assertThat(tar.code()).as("tar: %s", tar.err()).isZero();
    home = dir.resolve("tether-0.1.0-SNAPSHOT");
  }

  /** Runs a command in {@link #dir} with {@code env} changes (a null value removes a variable). */
  private Run run(List<String> cmd, Map<String, String> env) throws IOException, InterruptedException {
    Path out = Files.createTempFile(dir, "out", ".txt");
    Path err = Files.createTempFile(dir, "err", ".txt");
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile());
    pb.environment().remove("TETHER_DB");
    pb.environment().remove("TETHER_JAVA_OPTS");
    env.forEach((k, v) -> {
      if (v == null) {
        pb.environment().remove(k);
      } else {
        pb.environment().put(k, v);
      }
    });
    Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError(cmd + " did not end within 60 s");
    }
    return new Run(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
        Files.readString(err, StandardCharsets.UTF_8));
  }

  private Run tether(Path launcher, Map<String, String> env, String... args) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(launcher.toString());
    cmd.addAll(List.of(args));
    return run(cmd, env);
  }

  private Run tether(String... args) throws Exception {
    return tether(home.resolve("bin/tether"), Map.of("JAVA_HOME", JAVA_HOME), args);
  }

  @Test
  void archiveHoldsTheLauncherTheJarTheDocsAndTheLicence() throws Exception {
    assertThat(home.resolve("bin/tether")).isRegularFile();
    assertThat(Files.getPosixFilePermissions(home.resolve("bin/tether")))
        .contains(PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.GROUP_EXECUTE,
            PosixFilePermission.OTHERS_EXECUTE);
    assertThat(home.resolve("lib/tether.jar")).isRegularFile();
    assertThat(home.resolve("docs/CLI.md")).isRegularFile();
    assertThat(home.resolve("README.md")).isRegularFile();
    assertThat(home.resolve("deploy/systemd/tether-worker.service")).isRegularFile();
    assertThat(home.resolve("deploy/kubernetes/tether-worker.yaml")).isRegularFile();
    Path repo = MODULE.getParent();
    assertThat(home.resolve("LICENSE")).hasSameTextualContentAs(repo.resolve("LICENSE"));
    assertThat(Files.readString(home.resolve("LICENSE")))
        .contains("Apache License", "Version 2.0, January 2004");
    assertThat(home.resolve("NOTICE")).hasSameTextualContentAs(repo.resolve("NOTICE"));
    assertThat(home.resolve("licenses/postgresql/META-INF/LICENSE")).isRegularFile();
    assertThat(home.resolve("licenses/slf4j-api/META-INF/LICENSE.txt")).isRegularFile();
  }

  @Test
  void everyRelativeLinkOfTheArchivesDocumentationResolvesInsideIt() throws Exception {
    List<Path> pages = new ArrayList<>();
    try (java.util.stream.Stream<Path> all = Files.walk(home)) {
      all.filter(f -> f.toString().endsWith(".md") && !f.startsWith(home.resolve("licenses")))
          .forEach(pages::add);
    }
    assertThat(pages).contains(home.resolve("README.md"), home.resolve("docs/CLI.md"));
    java.util.regex.Pattern link = java.util.regex.Pattern.compile("\\]\\(([^)\\s]+)\\)");
    List<String> broken = new ArrayList<>();
    int checked = 0;
    for (Path page : pages) {
      java.util.regex.Matcher m = link.matcher(Files.readString(page, StandardCharsets.UTF_8));
      while (m.find()) {
        String target = m.group(1);
        if (target.matches("^(https?:|mailto:|#).*")) {
          continue;
        }
        checked++;
        Path resolved = page.getParent().resolve(target.replaceFirst("#.*$", "")).normalize();
        if (!resolved.startsWith(home) || !Files.exists(resolved)) {
          broken.add(home.relativize(page) + " -> " + target);
        }
      }
    }
    assertThat(checked).as("relative links checked").isGreaterThan(10);
    assertThat(broken).as("links that lead nowhere in the unpacked archive").isEmpty();
  }

  @Test
  void launcherPrintsTheVersionAndTheCommitOfTheBuild() throws Exception {
    Run v = tether("--version");
    assertThat(v.code()).as(v.err()).isZero();
    assertThat(v.out().strip()).matches("tether 0\\.1\\.0-SNAPSHOT \\(commit ([0-9a-f]{7,40}|unknown)\\)");
    String head = VersionTest.headCommit(MODULE);
    if (head != null) {
      assertThat(head).startsWith(v.out().strip().replaceAll(".*\\(commit ([^)]*)\\)", "$1"));
    }
  }

  @Test
  void launcherEnqueuesAndListsOnAnSqliteFile() throws Exception {
    String db = dir.resolve("store.db").toString();
    Run e = tether("enqueue", "--db", db, "--", "echo", "hello from the archive");
    assertThat(e.code()).as(e.err()).isZero();
    assertThat(e.out().strip()).isEqualTo("1");
    Run ls = tether("ls", "--db", db, "--json");
    assertThat(ls.code()).as(ls.err()).isZero();
    assertThat(ls.out()).contains("\"id\":1").contains("\"status\":\"pending\"")
        .contains("echo 'hello from the archive'");
  }

  @Test
  void launcherFindsJavaOnPathWithoutJavaHomeAndWorksThroughASymlink() throws Exception {
    Path link = dir.resolve("links/tether");
    Files.createDirectories(link.getParent());
    Files.createSymbolicLink(link, home.resolve("bin/tether"));
    Run v = tether(link, Map.of("JAVA_HOME", "", "PATH", JAVA_HOME + "/bin:/usr/bin:/bin"), "--version");
    assertThat(v.code()).as(v.err()).isZero();
    assertThat(v.out()).startsWith("tether 0.1.0-SNAPSHOT (commit ");
  }

  @Test
  void launcherWithoutAJavaRuntimeSaysSoAndExits127() throws Exception {
    // a PATH with the few tools the script needs, and no java
    Path bin = dir.resolve("nojava");
    Files.createDirectories(bin);
    for (String tool : List.of("dirname", "readlink")) {
      Path real = Path.of("/usr/bin", tool);
      Files.createSymbolicLink(bin.resolve(tool), Files.exists(real) ? real : Path.of("/bin", tool));
    }
    Map<String, String> env = new java.util.HashMap<>();
    env.put("JAVA_HOME", null);
    env.put("PATH", bin.toString());
    Run none = tether(home.resolve("bin/tether"), env, "--version");
    assertThat(none.code()).isEqualTo(127);
    assertThat(none.err()).contains("no Java runtime found").contains("JAVA_HOME");

    Run bad = tether(home.resolve("bin/tether"), Map.of("JAVA_HOME", dir.resolve("nowhere").toString()), "--version");
    assertThat(bad.code()).isEqualTo(127);
    assertThat(bad.err()).contains("JAVA_HOME is '" + dir.resolve("nowhere") + "'");
  }

  @Test
  void launcherAsProcessOneCollectsWhatCommandsLeaveAndPassesOnSigterm() throws Exception {
    // a container whose entry point is bin/tether, without an init: a new process id namespace
    assumeProcessOneCanBeRun();
    String db = dir.resolve("init.db").toString();
    for (String script : List.of("sleep 30 & echo started; exit 0", "(sleep 31 &); exit 0",
        "sleep 32 & sleep 33 & exit 0")) {
      Run e = tether("enqueue", "--db", db, "--", "sh", "-c", script);
      assertThat(e.code()).as(e.err()).isZero();
    }
    Path out = dir.resolve("init.out");
    Path err = dir.resolve("init.err");
    Process unshare = asProcessOne(List.of(home.resolve("bin/tether").toString(), "worker", "--db", db,
        "--concurrency", "2")).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    try {
      ProcessHandle init = org.awaitility.Awaitility.await("the namespace's process 1")
          .atMost(java.time.Duration.ofSeconds(10))
          .until(() -> unshare.toHandle().children().findFirst(), java.util.Optional::isPresent)
          .orElseThrow();
      org.awaitility.Awaitility.await("three items completed").atMost(java.time.Duration.ofSeconds(60))
          .until(() -> {
            Run ls = tether("ls", "--db", db, "--status", "completed", "--json");
            return ls.code() == 0 && ls.out().split("\"status\":\"completed\"", -1).length - 1 == 3;
          });
      // the leftovers were ended before each item completed: whatever process 1 inherited has ended
      org.awaitility.Awaitility.await("no zombie left under process 1")
          .atMost(java.time.Duration.ofSeconds(10))
          .until(() -> zombiesUnder(init.pid()) == 0);
      assertThat(init.children().map(h -> h.info().command().orElse("")))
          .as("process 1 runs the JVM as its child").anyMatch(c -> c.endsWith("/java"));

      assertThat(new ProcessBuilder("kill", "-TERM", Long.toString(init.pid())).start().waitFor())
          .isZero();
      assertThat(unshare.waitFor(60, TimeUnit.SECONDS)).as("the worker stopped").isTrue();
      assertThat(unshare.exitValue()).as("its status, passed on: %s", Files.readString(err)).isZero();
      assertThat(Files.readString(err)).contains("stopped").doesNotContain("This worker's JVM is process 1");
    } finally {
      unshare.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
      unshare.destroyForcibly();
    }
  }

  @Test
  void launcherAsProcessOneKeepsStdinTheJvmsStatusAndCtrlC() throws Exception {
    assumeProcessOneCanBeRun();
    String db = dir.resolve("stdin.db").toString();
    String launcher = home.resolve("bin/tether").toString();
    // stdin: a background job of sh reads /dev/null unless the script hands its own on
    Path commands = dir.resolve("commands.txt");
    Files.writeString(commands, "echo three\necho four\n");
    Process e = asProcessOne(List.of(launcher, "enqueue", "--db", db, "--file", "/dev/stdin"))
        .redirectInput(commands.toFile()).redirectErrorStream(true).start();
    String enqueued = new String(e.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(e.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(e.exitValue()).as(enqueued).isZero();
    assertThat(tether("ls", "--db", db, "--json").out()).contains("echo three").contains("echo four");

    // the JVM's own status: an unknown item is 1
    Process inspect = asProcessOne(List.of(launcher, "inspect", "999", "--db", db))
        .redirectErrorStream(true).start();
    String inspected = new String(inspect.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(inspect.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(inspect.exitValue()).as(inspected).isEqualTo(1);

    // Ctrl-C (SIGINT to process 1) reaches the worker, which stops as it does outside a container
    Path out = dir.resolve("int.out");
    Path err = dir.resolve("int.err");
    Process unshare = asProcessOne(List.of(launcher, "worker", "--db", db))
        .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    try {
      org.awaitility.Awaitility.await("the worker started").atMost(java.time.Duration.ofSeconds(30))
          .until(() -> Files.readString(out).startsWith("worker "));
      long init = unshare.toHandle().children().findFirst().orElseThrow().pid();
      assertThat(new ProcessBuilder("kill", "-INT", Long.toString(init)).start().waitFor()).isZero();
      assertThat(unshare.waitFor(60, TimeUnit.SECONDS)).as("stopped by SIGINT: %s", Files.readString(err))
          .isTrue();
      assertThat(unshare.exitValue()).as(Files.readString(err)).isZero();
      assertThat(Files.readString(err)).contains("SIGINT received");
    } finally {
      unshare.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
      unshare.destroyForcibly();
    }
  }

  @Test
  void launcherAsProcessOneUnderBashPassesTheStatusOn() throws Exception {
    assumeProcessOneCanBeRun();
    // bash as /bin/sh (Fedora, RHEL, Amazon Linux) forgets a status once reported: 127 before
    Process unknown = asProcessOne(List.of("bash", "--posix", home.resolve("bin/tether").toString(),
        "inspect", "999", "--db", dir.resolve("bash.db").toString())).redirectErrorStream(true).start();
    String said = new String(unknown.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(unknown.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(unknown.exitValue()).as(said).isEqualTo(1);
  }

  @Test
  void aTerminalsCtrlCReachesTheWorkerOnceWhenTheLauncherIsProcessOne() throws Exception {
    assumeProcessOneCanBeRun();
    String db = dir.resolve("ctrlc.db").toString();
    Path started = dir.resolve("started");
    Run e = tether("enqueue", "--db", db, "--", "sh", "-c", "touch '" + started + "'; sleep 2; echo slept");
    assertThat(e.code()).as(e.err()).isZero();
    long id = Long.parseLong(e.out().strip());
    Path out = dir.resolve("ctrlc.out");
    Path err = dir.resolve("ctrlc.err");
    // a session and process group of its own, as a terminal's foreground job has
    ProcessBuilder pb = asProcessOne(List.of(home.resolve("bin/tether").toString(), "worker", "--db", db,
        "--drain-timeout", "30s")).redirectOutput(out.toFile()).redirectError(err.toFile());
    pb.command().add(0, "setsid");
    Process job = pb.start();
    try {
      org.awaitility.Awaitility.await("the command started").atMost(java.time.Duration.ofSeconds(30))
          .until(() -> Files.exists(started));
      // Ctrl-C: SIGINT to the whole foreground group
      assertThat(new ProcessBuilder("kill", "-INT", "--", "-" + job.pid()).start().waitFor()).isZero();
      assertThat(job.waitFor(60, TimeUnit.SECONDS)).as(Files.readString(err)).isTrue();
      assertThat(job.exitValue()).as(Files.readString(err)).isZero();
      // one SIGINT: the drain let the command finish (a second one would have ended it at once)
      assertThat(Files.readString(err)).contains("SIGINT received").doesNotContain("received again");
      assertThat(tether("ls", "--db", db, "--json").out()).contains("\"id\":" + id)
          .contains("\"status\":\"completed\"");
    } finally {
      job.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
      job.destroyForcibly();
    }
  }

  @Test
  void aWorkerJvmThatIsProcessOneSaysItCannotCollectWhatCommandsLeave() throws Exception {
    assumeProcessOneCanBeRun();
    Path err = dir.resolve("jvm1.err");
    Process unshare = asProcessOne(List.of(Path.of(JAVA_HOME, "bin", "java").toString(),
        "-Djava.io.tmpdir=" + dir, "-jar", home.resolve("lib/tether.jar").toString(), "worker", "--db",
        dir.resolve("jvm1.db").toString()))
        .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(err.toFile()).start();
    try {
      org.awaitility.Awaitility.await("the warning").atMost(java.time.Duration.ofSeconds(30))
          .until(() -> Files.readString(err).contains("This worker's JVM is process 1"));
      long init = unshare.toHandle().children().findFirst().orElseThrow().pid();
      assertThat(new ProcessBuilder("kill", "-TERM", Long.toString(init)).start().waitFor()).isZero();
      assertThat(unshare.waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(unshare.exitValue()).as(Files.readString(err)).isZero();
    } finally {
      unshare.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
      unshare.destroyForcibly();
    }
  }

  /** Skips (saying why) where this user cannot start a process id namespace. */
  private void assumeProcessOneCanBeRun() throws Exception {
    Run probe = run(List.of("unshare", "--pid", "--fork", "--mount-proc", "true"), Map.of());
    org.junit.jupiter.api.Assumptions.assumeTrue(probe.code() == 0,
        "unshare --pid (util-linux, as root or with user namespaces) is needed to run a program as"
            + " process 1; skipped: " + probe.err());
  }

  /**
   * Starts {@code command} as process 1 of a new process id namespace ({@code unshare}), in
   * {@link #dir}, with this test's Java; the workers' launcher for their commands goes to this
   * test's directory, not /tmp.
   */
  private ProcessBuilder asProcessOne(List<String> command) {
    List<String> all = new ArrayList<>(List.of("unshare", "--pid", "--fork", "--mount-proc"));
    all.addAll(command);
    ProcessBuilder pb = new ProcessBuilder(all).directory(dir.toFile());
    pb.environment().put("JAVA_HOME", JAVA_HOME);
    pb.environment().put("TETHER_JAVA_OPTS", "-Djava.io.tmpdir=" + dir);
    pb.environment().remove("TETHER_DB");
    return pb;
  }

  /** Zombies whose parent is {@code pid}, from {@code /proc}. */
  private static long zombiesUnder(long pid) throws IOException {
    try (java.util.stream.Stream<Path> procs = Files.list(Path.of("/proc"))) {
      return procs.filter(p -> p.getFileName().toString().matches("\\d+")).filter(p -> {
        try {
          String stat = Files.readString(p.resolve("stat"));
          String[] f = stat.substring(stat.lastIndexOf(") ") + 2).split(" ");
          return f[0].equals("Z") && f[1].equals(Long.toString(pid));
        } catch (IOException | RuntimeException e) {
          return false; // ended meanwhile
        }
      }).count();
    }
  }
}
