package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The helper that ends the sessions of a dead worker's commands, with real processes: a
 * "command" is a shell started in a session of its own, as the runner starts commands, that
 * starts background processes and prints their ids. The worker's death is the pipe's end, which
 * the kernel causes when the JVM dies ({@code WorkerKilledIT} kills a real worker).
 */
@Timeout(30)
class SessionReaperTest {
  private final List<Process> commands = new ArrayList<>();
  private final List<Long> started = new ArrayList<>();
  private SessionReaper reaper;

  @BeforeEach
  void setsidIsHere() {
    assertThat(ProcessRunner.sessionLauncher()).as("setsid (util-linux) on this machine").isNotEmpty();
    assertThat(SessionMembers.readable()).as("/proc of this process id namespace").isTrue();
    reaper = new SessionReaper(ProcessRunner.sessionLauncher(), true);
  }

  @AfterEach
  void endEverything() {
    reaper.closeAsIfDead();
    for (long pid : started) {
      ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
    }
    for (Process p : commands) {
      p.destroyForcibly();
    }
  }

  /**
   * Starts {@code script} in a session of its own; returns the process ids it prints (one per
   * line, {@code lines} of them) after its own.
   */
  private long[] command(String script, int lines) throws Exception {
    List<String> argv = new ArrayList<>(ProcessRunner.sessionLauncher());
    argv.addAll(List.of("/bin/sh", "-c", "echo $$; " + script));
    Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
    commands.add(p);
    BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    long[] pids = new long[lines + 1];
    for (int i = 0; i <= lines; i++) {
      String line = r.readLine();
      assertThat(line).as("line %s of the command's output", i).isNotNull();
      pids[i] = Long.parseLong(line.strip());
      started.add(pids[i]);
    }
    assertThat(pids[0]).as("the session leader is the started process").isEqualTo(p.pid());
    return pids;
  }

  /** Waits until none of {@code pids} runs any more. */
  private static void awaitGone(long... pids) {
    for (long pid : pids) {
      await("process " + pid + " gone").atMost(Duration.ofSeconds(10)).until(() -> !running(pid));
    }
  }

  private static boolean running(long pid) {
    return ProcessHandle.of(pid).map(h -> h.isAlive() && !SessionMembers.isZombie(pid)).orElse(false);
  }

  /** The process group of {@code pid}, from {@code /proc}; -1 if it cannot be read. */
  private static long groupOf(long pid) {
    try {
      String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/" + pid + "/stat"));
      return Long.parseLong(stat.substring(stat.lastIndexOf(") ") + 2).split(" ")[2]);
    } catch (java.io.IOException | RuntimeException e) {
      return -1;
    }
  }

  @Test
  void aDeadWorkersCommandsAreEndedWithEverythingTheyStarted() throws Exception {
    // a background job, a process whose parent exited (re-parented away from the command), and
    // one in a process group of its own (as a shell with job control puts its jobs): all in the
    // session
    long[] a = command("sleep 301 & echo $!; (sleep 302 & echo $!);"
        + " perl -e 'setpgrp(0, 0); exec q(sleep), 303' & echo $!; wait", 3);
    long[] b = command("sleep 304 & echo $!; wait", 1);
    reaper.watch(a[0]);
    reaper.watch(b[0]);
    long helper = reaper.helperPid();
    assertThat(helper).isPositive();
    for (long pid : new long[] {a[1], a[2], a[3], b[1]}) {
      await("process " + pid + " running").atMost(Duration.ofSeconds(5)).until(() -> running(pid));
    }
    await("the perl process in a group of its own").atMost(Duration.ofSeconds(5))
        .until(() -> groupOf(a[3]) == a[3]);

    reaper.closeAsIfDead();

    awaitGone(a[0], a[1], a[2], a[3], b[0], b[1], helper);
  }

  @Test
  void aCommandTakenOffTheListIsLeftAlone() throws Exception {
    long[] kept = command("sleep 305 & echo $!; wait", 1);
    long[] ended = command("sleep 306 & echo $!; wait", 1);
    reaper.watch(kept[0]);
    reaper.watch(ended[0]);
    reaper.forget(kept[0]);
    long helper = reaper.helperPid();

    reaper.closeAsIfDead();

    awaitGone(ended[1], helper);
    assertThat(running(kept[0])).as("the session no longer listed").isTrue();
    assertThat(running(kept[1])).isTrue();
  }

  @Test
  void theHelperIgnoresTheSignalsOfATerminalAndOfAServiceStop() throws Exception {
    long[] a = command("sleep 307 & echo $!; wait", 1);
    long[] b = command("sleep 317 & echo $!; wait", 1);
    reaper.watch(a[0]); // returns once the helper said it ignores them
    long helper = reaper.helperPid();
    for (String signal : new String[] {"INT", "HUP", "TERM"}) {
      assertThat(new ProcessBuilder("kill", "-" + signal, Long.toString(helper)).start().waitFor())
          .as("kill -%s of the helper", signal).isZero();
    }
    reaper.watch(b[0]); // a write after the signals: the pipe still has its reader
    assertThat(reaper.helperPid()).as("the same helper").isEqualTo(helper);
    assertThat(running(helper)).isTrue();

    reaper.closeAsIfDead();
    awaitGone(a[1], b[1]);
  }

  @Test
  void aProcessIdListedTwiceStaysListedUntilBothAreTakenOff() throws Exception {
    // a process id handed out again before the first command's session was taken off
    long[] a = command("sleep 318 & echo $!; wait", 1);
    reaper.watch(a[0]);
    reaper.watch(a[0]);
    reaper.forget(a[0]);
    long helper = reaper.helperPid();

    reaper.closeAsIfDead();

    awaitGone(a[1], helper);
  }

  @Test
  void aProcessWhoseNameHoldsALineBreakIsFoundToo() throws Exception {
    // in a group of its own, so only the scan of /proc finds it; its name would end the line a
    // stat file is read as, before the session's field
    long[] a = command("perl -e 'setpgrp(0, 0); $0 = \"nl\\n) S 1 1 1\"; sleep 319' & echo $!; wait", 1);
    await("the name with a line break").atMost(Duration.ofSeconds(5)).until(() -> {
      try {
        return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/" + a[1] + "/comm"))
            .startsWith("nl\n");
      } catch (java.io.IOException e) {
        return false;
      }
    });
    reaper.watch(a[0]);

    reaper.closeAsIfDead();

    awaitGone(a[1]);
  }

  @Test
  void aHelperThatCannotStartIsTriedAgainOnlyAfterAPause() throws Exception {
    // a launcher that counts its runs and fails, as a missing /bin/sh would
    java.nio.file.Path runs = java.nio.file.Files.createTempFile("reaper-runs", ".txt");
    try {
      SessionReaper failing = new SessionReaper(
          List.of("/bin/sh", "-c", "echo run >> '" + runs + "'; exit 127", "launcher"), true);
      for (int i = 0; i < 5; i++) {
        failing.watch(1000 + i);
        failing.forget(1000 + i);
      }
      assertThat(failing.helperPid()).isEqualTo(-1);
      assertThat(java.nio.file.Files.readAllLines(runs)).as("starts tried").hasSize(1);
    } finally {
      java.nio.file.Files.deleteIfExists(runs);
    }
  }

  @Test
  void aHelperThatDiedIsReplacedAndToldEveryRunningSession() throws Exception {
    long[] a = command("sleep 308 & echo $!; wait", 1);
    long[] b = command("sleep 309 & echo $!; wait", 1);
    reaper.watch(a[0]);
    long first = reaper.helperPid();
    ProcessHandle.of(first).orElseThrow().destroyForcibly();
    awaitGone(first);

    reaper.watch(b[0]); // finds the pipe broken: a new helper, told of a and b
    long second = reaper.helperPid();
    assertThat(second).isPositive().isNotEqualTo(first);

    reaper.closeAsIfDead();
    awaitGone(a[1], b[1]);
  }
}
