package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.Heartbeat;
import dev.tether.LeaseExtender;
import dev.tether.loop.WorkContext;
import dev.tether.mailbox.Message;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class ProcessRunnerTest {
  private final ProcessRunner runner =
      new ProcessRunner(1000, Duration.ofMillis(500), Duration.ofMillis(100));
  private final Heartbeat heartbeat = new Heartbeat();
  private final AtomicInteger beats = new AtomicInteger();

  ProcessRunnerTest() {
    heartbeat.addCallback(beats::incrementAndGet);
  }

  private static CommandSpec sh(String script) {
    return new CommandSpec(List.of(script), true, "output", Map.of());
  }

  private CommandResult run(CommandSpec spec, WorkContext ctx) throws InterruptedException {
    return runner.run(spec, ctx, Map.of(), () -> false, ProcessRunner.OutputListener.NONE);
  }

  /**
   * A message whose {@code flushOutput} fails the first time and counts every call; every other
   * method does nothing and answers a default (the runner only beats, reports and flushes).
   */
  private static Message<?, ?> flakyFlushMessage(AtomicInteger flushes) {
    return (Message<?, ?>) Proxy.newProxyInstance(
        ProcessRunnerTest.class.getClassLoader(), new Class<?>[] {Message.class},
        (proxy, method, args) -> {
          switch (method.getName()) {
            case "flushOutput":
              if (flushes.incrementAndGet() == 1) {
                throw new IllegalStateException("the store did not answer");
              }
              return null;
            case "id":
              return "m1";
            case "deliveryCount":
              return 1;
            case "toString":
              return "flaky-flush message";
            case "hashCode":
              return System.identityHashCode(proxy);
            case "equals":
              return proxy == args[0];
            default:
              Class<?> t = method.getReturnType();
              if (t == boolean.class) {
                return false;
              }
              if (t == int.class || t == long.class) {
                return t == int.class ? (Object) 0 : (Object) 0L;
              }
              if (t == Optional.class) {
                return Optional.empty();
              }
              return null;
          }
        });
  }

  @Test
  void aQuietCommandsOutputIsWrittenAgainWhenItsFirstWriteFailed() throws Exception {
    AtomicInteger flushes = new AtomicInteger();
    LeaseExtender extender = new LeaseExtender();
    LeaseExtender.Attachment attachment = extender.attach(flakyFlushMessage(flushes), heartbeat);
    WorkContext ctx = WorkContext.builder(heartbeat).attachment(attachment).build();
    Path go = Files.createTempFile("tether-flush", ".go");
    Files.delete(go);
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      Future<CommandResult> r = pool.submit(() -> run(
          sh("echo connecting...; while [ ! -f '" + go + "' ]; do sleep 0.05; done"), ctx));
      // the command printed and went quiet: its output is flushed, fails, and is flushed again
      await().atMost(Duration.ofSeconds(20)).until(() -> flushes.get() >= 2);
      Files.createFile(go);
      assertThat(r.get(20, TimeUnit.SECONDS).exitStatus()).isZero();
      assertThat(flushes.get()).as("flushes: one failed, one written, none after").isEqualTo(2);
    } finally {
      pool.shutdownNow();
      Files.deleteIfExists(go);
      attachment.close();
    }
  }

  @Test
  void everyOutputChunkIsOneBeat() throws Exception {
    CommandResult r =
        run(sh("for i in 1 2 3 4 5 6; do echo line$i; sleep 0.05; done; echo oops >&2"),
            WorkContext.of(heartbeat));
    assertThat(r.exitStatus()).isZero();
    assertThat(r.chunks()).isGreaterThanOrEqualTo(2); // lines 50 ms apart: separate reads, unless the machine stalls
    assertThat(beats.get()).isEqualTo((int) r.chunks());
    assertThat(r.stdoutTail()).contains("line1").contains("line6");
    assertThat(r.stderrTail()).isEqualTo("oops\n");
    assertThat(r.succeeded()).isTrue();
  }

  @Test
  void aSilentCommandDoesNotBeat() throws Exception {
    CommandResult r = run(sh("sleep 0.4"), WorkContext.of(heartbeat));
    assertThat(r.exitStatus()).isZero();
    assertThat(beats.get()).isZero();
  }

  @Test
  void processLivenessBeatsWhileTheChildIsAlive() throws Exception {
    CommandSpec spec = new CommandSpec(List.of("sleep 0.8"), true, "process", Map.of());
    CommandResult r = run(spec, WorkContext.of(heartbeat));
    assertThat(r.exitStatus()).isZero();
    assertThat(beats.get()).isBetween(2, 12); // every 100 ms for 800 ms, allowing for a loaded machine
  }

  @Test
  void tailIsBoundedWhileAllBytesAreCounted() throws Exception {
    CommandResult r = run(sh("head -c 100000 /dev/zero | tr '\\0' a; echo END"), WorkContext.of(heartbeat));
    assertThat(r.stdoutBytes()).isEqualTo(100_004);
    assertThat(r.stdoutTail()).hasSize(1000).startsWith("aaa").endsWith("aaEND\n");
  }

  @Test
  void nonUtf8OutputIsStoredAsValidText() throws Exception {
    CommandResult r = run(sh("printf '\\377\\376ok\\n'"), WorkContext.of(heartbeat));
    assertThat(r.stdoutTail()).isEqualTo("\uFFFD\uFFFDok\n");
    CommandResult back = CommandResult.fromJsonOrNull(r.toJson());
    assertThat(back).isEqualTo(r);
  }

  @Test
  void nonZeroExitIsReportedWithTheLastErrorLine() throws Exception {
    CommandResult r = run(sh("echo partial; echo 'disk full' >&2; exit 7"), WorkContext.of(heartbeat));
    assertThat(r.exitStatus()).isEqualTo(7);
    assertThat(r.succeeded()).isFalse();
    assertThat(r.failureSummary()).isEqualTo("exit status 7: disk full");
    assertThat(r.failureReport(4))
        .isEqualTo("exit status 7: disk full\n--- stderr (tail) ---\n…ull\n--- stdout (tail) ---\n…ial");
  }

  @Test
  void aProgramThatCannotStartIsAResultNotAnException() throws Exception {
    CommandResult r = run(CommandSpec.of(List.of("/nonexistent/program-xyz")), WorkContext.of(heartbeat));
    assertThat(r.exitStatus()).isEqualTo(-1);
    assertThat(r.error()).contains("/nonexistent/program-xyz");
    assertThat(r.failureSummary()).startsWith("could not start");
  }

  @Test
  void aProgramNotInThePathOrNotExecutableCannotStart() throws Exception {
    CommandResult r = run(CommandSpec.of(List.of("no-such-program-xyz")), WorkContext.of(heartbeat));
    assertThat(r.exitStatus()).isEqualTo(-1);
    assertThat(r.error()).contains("no-such-program-xyz");
    assertThat(ProcessRunner.missingProgram("sh", "/nonexistent:/bin:/usr/bin")).isNull();
    java.nio.file.Path plain = Files.createTempFile("tether-not-executable", ".txt");
    try {
      assertThat(ProcessRunner.missingProgram(plain.toString(), null)).contains("permission denied");
    } finally {
      Files.delete(plain);
    }
    assertThat(ProcessRunner.missingProgram("sh", "/nonexistent")).contains("not found in PATH");
  }

  @Test
  void commandsStartWithTheParentDeathSignalWhereSetprivSupportsIt() {
    // Debian and Ubuntu ship util-linux's setpriv; the end-to-end test kills a worker to see it work.
    if (new java.io.File("/usr/bin/setpriv").canExecute()) {
      assertThat(ProcessRunner.parentDeathLauncher())
          .containsExactly("/usr/bin/setpriv", "--pdeathsig", "KILL", "--");
    } else {
      assertThat(ProcessRunner.parentDeathLauncher()).isEmpty();
    }
  }

  @Test
  void aCommandRunsInAProcessGroupOfItsOwnNotTheWorkers() throws Exception {
    // Ctrl-C in a terminal signals the whole foreground group: in the worker's group a command
    // died of it at once (exit 130) and was charged, instead of the worker draining it
    assertThat(ProcessRunner.sessionLauncher()).as("setsid (util-linux) on this machine").isNotEmpty();
    CommandResult r = run(sh("echo $$; cut -d' ' -f5,6 /proc/$$/stat"), WorkContext.of(heartbeat));
    assertThat(r.exitStatus()).as(r.stderrTail()).isZero();
    String[] lines = r.stdoutTail().strip().split("\n");
    long pid = Long.parseLong(lines[0].strip());
    String[] groupAndSession = lines[1].strip().split(" ");
    long myGroup = Long.parseLong(Files.readString(java.nio.file.Path.of("/proc/self/stat"))
        .replaceFirst("^.*\\) ", "").split(" ")[2]);
    assertThat(Long.parseLong(groupAndSession[0])).as("its process group").isEqualTo(pid).isNotEqualTo(myGroup);
    assertThat(Long.parseLong(groupAndSession[1])).as("its session").isEqualTo(pid);
  }

  @Test
  void argumentsAreNeverInterpretedByAShell() throws Exception {
    CommandResult r = run(CommandSpec.of(List.of("echo", "$HOME", "a;b", "*")), WorkContext.of(heartbeat));
    assertThat(r.stdoutTail()).isEqualTo("$HOME a;b *\n");
  }

  @Test
  void childGetsACleanEnvironmentPlusTheGivenVariables() throws Exception {
    CommandSpec spec = new CommandSpec(List.of("env"), false, "output", Map.of("FROM_ITEM", "x y"));
    CommandResult r =
        runner.run(spec, WorkContext.of(heartbeat), Map.of("TETHER_ITEM_ID", "42"), () -> false,
            ProcessRunner.OutputListener.NONE);
    Set<String> names = new HashSet<>();
    for (String line : r.stdoutTail().split("\n")) {
      names.add(line.substring(0, line.indexOf('=')));
    }
    assertThat(r.stdoutTail()).contains("TETHER_ITEM_ID=42").contains("FROM_ITEM=x y");
    Set<String> allowed = new HashSet<>(ProcessRunner.INHERITED_ENV);
    allowed.addAll(Arrays.asList("TETHER_ITEM_ID", "FROM_ITEM", "PWD", "SHLVL", "_"));
    assertThat(allowed).containsAll(names);
  }

  @Test
  void lostLeaseKillsTheWholeProcessTree() throws Exception {
    WorkContext ctx = lostAtTheFirstBeat();
    // the shell starts a grandchild, reports its pid, then waits (trapping TERM to survive it)
    CommandSpec spec = sh("trap '' TERM; sleep 60 & echo $!; wait");
    long[] grandchild = {-1};
    long start = System.nanoTime();
    CommandResult r =
        runner.run(spec, ctx, Map.of(), () -> false, (stream, b, len) -> {
          grandchild[0] = Long.parseLong(new String(b, 0, len).trim());
        });
    long tookMs = (System.nanoTime() - start) / 1_000_000;
    assertThat(r.stopped()).isEqualTo(CommandResult.STOPPED_LEASE_LOST);
    assertThat(r.succeeded()).isFalse();
    assertThat(tookMs).isLessThan(10_000);
    assertThat(grandchild[0]).isPositive();
    await().atMost(Duration.ofSeconds(5))
        .until(() -> !alive(grandchild[0]));
  }

  @Test
  void lostLeaseAlsoEndsProcessesWhoseParentExitedMeanwhile() throws Exception {
    // a subshell starts a sleep in the background and exits: the sleep is re-parented and no
    // longer a descendant of the command, but it is still in the command's session
    WorkContext ctx = lostAtTheFirstBeat();
    long[] orphan = {-1};
    try {
      CommandResult r = runner.run(sh("(sleep 60 >/dev/null 2>&1 & echo $!); sleep 60"), ctx,
          Map.of(), () -> false, (stream, b, len) -> {
            orphan[0] = Long.parseLong(new String(b, 0, len).trim());
          });
      assertThat(r.stopped()).isEqualTo(CommandResult.STOPPED_LEASE_LOST);
      assertThat(orphan[0]).isPositive();
      await().atMost(Duration.ofSeconds(5)).until(() -> !alive(orphan[0]));
    } finally {
      ProcessHandle.of(orphan[0]).ifPresent(ProcessHandle::destroyForcibly);
    }
  }

  @Test
  void aCommandThatExitsEndsWhatItLeftRunningInItsSession() throws Exception {
    long background = -1;
    try {
      CommandResult r =
          run(sh("sleep 60 >/dev/null 2>&1 & echo $!; exit 0"), WorkContext.of(heartbeat));
      assertThat(r.succeeded()).as(r.stderrTail()).isTrue();
      background = Long.parseLong(r.stdoutTail().strip());
      long pid = background;
      await().atMost(Duration.ofSeconds(5)).until(() -> !alive(pid));
    } finally {
      ProcessHandle.of(background).ifPresent(ProcessHandle::destroyForcibly);
    }
  }

  @Test
  void aCommandThatEndedKeepsItsResultWhenInterruptedWhileItsOutputIsReadToTheEnd()
      throws Exception {
    // a process that left the session keeps the output open after the command exits (the JDK
    // closes the pipe on exit only when no reader is blocked on it: hence the second's pause
    // before the exit): the runner waits for the readers, and an interrupt then must not turn a
    // finished command into an interrupted one (the worker would hand back an item whose command
    // completed)
    long[] holder = {-1};
    java.util.concurrent.CompletableFuture<Object> outcome = new java.util.concurrent.CompletableFuture<>();
    Thread runnerThread = new Thread(() -> {
      try {
        CommandResult r = runner.run(sh("setsid sleep 30 & echo $!; sleep 1; exit 0"),
            WorkContext.of(heartbeat), Map.of(), () -> false, (stream, b, len) -> {
              holder[0] = Long.parseLong(new String(b, 0, len).trim());
            });
        outcome.complete(Thread.currentThread().isInterrupted() ? r : "not interrupted: " + r);
      } catch (Throwable e) {
        outcome.complete(e);
      }
    });
    runnerThread.start();
    try {
      await().atMost(Duration.ofSeconds(10)).until(() -> Arrays.stream(runnerThread.getStackTrace())
          .anyMatch(f -> f.getClassName().equals(Thread.class.getName())
              && f.getMethodName().equals("join")));
      runnerThread.interrupt();
      Object result = outcome.get(20, TimeUnit.SECONDS);
      assertThat(result).isInstanceOf(CommandResult.class);
      assertThat(((CommandResult) result).succeeded()).isTrue();
    } finally {
      ProcessHandle.of(holder[0]).ifPresent(ProcessHandle::destroyForcibly);
    }
  }

  @Test
  void sessionMembersAreReadFromProcStatWhateverTheCommandName() {
    assertThat(SessionMembers.parseStat("123 (a b) c)) S 1 123 456 0 -1 4194560 ..."))
        .containsExactly(456, 'S');
    assertThat(SessionMembers.parseStat("7 (sleep) Z 1 7 7 0")).containsExactly(7, 'Z');
    assertThat(SessionMembers.parseStat("garbage")).isNull();
    assertThat(SessionMembers.parseStat("1 (x) S 1 x")).isNull();
    assertThat(SessionMembers.of(ProcessHandle.current().pid() + 10_000_000L)).isEmpty();
    assertThat(SessionMembers.isZombie(ProcessHandle.current().pid())).isFalse();
  }

  @Test
  void aZombieIsToldApartFromARunningProcess() throws Exception {
    // the shell starts a short sleep, then becomes a long one that never collects it
    Process p = new ProcessBuilder(List.of("sh", "-c", "sleep 0.1 & echo $!; exec sleep 30")).start();
    try {
      long child = Long.parseLong(new java.io.BufferedReader(
          new java.io.InputStreamReader(p.getInputStream())).readLine().strip());
      await().atMost(Duration.ofSeconds(10)).until(() -> SessionMembers.isZombie(child));
      assertThat(ProcessHandle.of(child).map(ProcessHandle::isAlive))
          .as("the JDK counts a zombie alive").contains(true);
      assertThat(SessionMembers.isZombie(p.pid())).isFalse();
    } finally {
      p.destroyForcibly();
    }
  }

  @Test
  void processIdsHandedOutAfterALeaderAreCountedAroundTheWrap() {
    assertThat(SessionMembers.handedOutAfter(150, 100, 200)).isTrue();
    assertThat(SessionMembers.handedOutAfter(100, 100, 200)).isFalse();
    assertThat(SessionMembers.handedOutAfter(201, 100, 200)).isFalse();
    assertThat(SessionMembers.handedOutAfter(50, 100, 200)).isFalse();
    // the counter wrapped after the leader: ids above it, and the low ones up to the last
    assertThat(SessionMembers.handedOutAfter(32000, 30000, 40)).isTrue();
    assertThat(SessionMembers.handedOutAfter(40, 30000, 40)).isTrue();
    assertThat(SessionMembers.handedOutAfter(41, 30000, 40)).isFalse();
    assertThat(SessionMembers.handedOutAfter(29999, 30000, 40)).isFalse();
  }

  @Test
  void aShortLivedScanFindsWhatAFullScanFinds() throws Exception {
    assertThat(ProcessRunner.sessionLauncher()).as("setsid (util-linux) on this machine").isNotEmpty();
    Process p = new ProcessBuilder(List.of(ProcessRunner.sessionLauncher().get(0), "sh", "-c",
        "sleep 30 & sleep 30"))
        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    try {
      await().atMost(Duration.ofSeconds(10)).until(() -> SessionMembers.of(p.pid()).size() == 3);
      assertThat(SessionMembers.ofShortLived(p.pid())).hasSize(2); // the leader's id is not after itself
    } finally {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
    }
  }

  /** A context whose lease is lost once the command has beaten once (printed its first line). */
  private WorkContext lostAtTheFirstBeat() {
    AtomicBoolean lost = new AtomicBoolean();
    Thread setter = new Thread(() -> {
      while (beats.get() == 0) {
        Thread.onSpinWait();
      }
      lost.set(true);
    });
    setter.setDaemon(true);
    setter.start();
    return WorkContext.builder(heartbeat).leaseLost(lost::get).build();
  }

  /** Alive and not a zombie (an orphan's zombie stays until PID 1 collects it, if ever). */
  private static boolean alive(long pid) {
    return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)
        && !SessionMembers.isZombie(pid);
  }

  @Test
  void extraStopSignalStopsTheCommandAsLeaseLost() throws Exception {
    AtomicBoolean probe = new AtomicBoolean();
    new Thread(() -> {
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        return;
      }
      probe.set(true);
    }).start();
    CommandResult r =
        runner.run(sh("sleep 30"), WorkContext.of(heartbeat), Map.of(), probe::get,
            ProcessRunner.OutputListener.NONE);
    assertThat(r.stopped()).isEqualTo(CommandResult.STOPPED_LEASE_LOST);
    assertThat(r.durationMs()).isLessThan(5000);
  }

  @Test
  void shutdownStopsTheCommand() throws Exception {
    AtomicBoolean shutdown = new AtomicBoolean();
    WorkContext ctx = WorkContext.builder(heartbeat).shutdownRequested(shutdown::get).build();
    new Thread(() -> {
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        return;
      }
      shutdown.set(true);
    }).start();
    CommandResult r = run(sh("sleep 30"), ctx);
    assertThat(r.stopped()).isEqualTo(CommandResult.STOPPED_SHUTDOWN);
    assertThat(r.durationMs()).isLessThan(5000);
  }
}
