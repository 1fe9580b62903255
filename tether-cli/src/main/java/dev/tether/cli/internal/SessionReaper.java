package dev.tether.cli.internal;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ends the sessions of a worker's running commands when the worker dies, however it dies ({@code
 * kill -9}, the kernel's OOM killer, the watchdog's SIGKILL), so that a redelivered item never runs
 * beside what its previous delivery started.
 *
 * <p>The kernel's parent-death signal ({@code setpriv --pdeathsig}) reaches only the command
 * itself: a shell's children, a pipeline, a program's workers are re-parented and run on. So this
 * keeps a small helper process, a POSIX shell in a session of its own (so that a terminal's Ctrl-C
 * or a signal to the worker's process group does not reach it), that reads from a pipe the
 * session ids of the commands now running, {@code +ID} when one starts and {@code -ID} once it
 * has ended with everything it left. When the worker dies the kernel closes the pipe; the helper
 * reads its end and sends SIGKILL to every process of the sessions still listed: their process
 * groups first, then, where {@code /proc} shows this process id namespace, every process whose
 * session id is one of them (also those that moved to another process group, as a shell with job
 * control moves its jobs), again until none is left. A process that started a session of its own
 * ({@code setsid}, as daemons do) is not followed, as by the worker itself. The helper ignores
 * SIGINT, SIGHUP and SIGTERM, and exits as soon as the pipe ends with no session listed (a worker
 * that drained and exited normally).
 *
 * <p>One helper per JVM, started with the first command ({@link #shared()}), only where commands
 * get sessions of their own ({@code setsid}); costs a {@code sh} process (about 1 MB) and a few
 * bytes written per command. If the helper dies, the next write starts another and lists the
 * running sessions to it again.
 *
 * <p>Thread-safe.
 */
final class SessionReaper {
  private static final Logger log = LoggerFactory.getLogger(SessionReaper.class);

  /**
   * The helper's program ({@code sh -c}); its first argument says whether {@code /proc} may be
   * scanned ({@code proc}) or only process groups signalled ({@code groups}).
   */
  static final String SCRIPT = String.join("\n",
      "trap '' INT HUP TERM PIPE",
      "s=' '",
      "while IFS= read -r l; do",
      "  x=${l#?}",
      "  case $x in ''|*[!0-9]*) continue ;; esac",
      "  case $l in",
      "    +*) s=\"$s$x \" ;;",
      "    -*) case $s in *\" $x \"*) s=\"${s%% $x *} ${s#* $x }\" ;; esac ;;",
      "  esac",
      "done",
      "[ \"$s\" = ' ' ] && exit 0",
      "for x in $s; do kill -KILL \"-$x\" 2>/dev/null; done",
      "[ \"$1\" = proc ] || exit 0",
      "i=0",
      "while [ $i -lt 50 ]; do",
      "  found=",
      "  for f in /proc/[0-9]*/stat; do",
      "    IFS= read -r line < \"$f\" 2>/dev/null || continue",
      "    set -- ${line##*') '}",
      "    [ \"$1\" = Z ] && continue",
      "    case $s in *\" $4 \"*) p=${f#/proc/}; kill -KILL \"${p%/stat}\" 2>/dev/null && found=1 ;; esac",
      "  done",
      "  [ -z \"$found\" ] && exit 0",
      "  i=$((i+1))",
      "done",
      "");

  /** How long after a helper failed to start no other start is tried. */
  private static final long RETRY_PAUSE_NANOS = TimeUnit.SECONDS.toNanos(10);

  private final List<String> sessionLauncher;
  private final boolean scanProc;
  /** The sessions listed: the commands running now. */
  private final Set<Long> sessions = new LinkedHashSet<>();
  private Process helper;
  private OutputStream pipe;
  /** {@link System#nanoTime()} of the last start that failed, or 0. */
  private long failedAt;
  private boolean warned;

  /**
   * @param sessionLauncher the command prefix that starts a program in a session of its own
   *     ({@code setsid})
   * @param scanProc whether {@code /proc} shows this JVM's process id namespace
   */
  SessionReaper(List<String> sessionLauncher, boolean scanProc) {
    this.sessionLauncher = List.copyOf(sessionLauncher);
    this.scanProc = scanProc;
  }

  /** The JVM's one reaper, or null where commands get no session of their own. */
  static SessionReaper shared() {
    return Shared.REAPER;
  }

  /** The holder idiom: the shared reaper is made when a command first starts. */
  private static final class Shared {
    static final SessionReaper REAPER = ProcessRunner.sessionLauncher().isEmpty()
        ? null
        : new SessionReaper(ProcessRunner.sessionLauncher(), SessionMembers.readable());
  }

  /**
   * Lists the session {@code sessionId} (a command that now runs, its leader): it is ended if
   * this JVM dies before {@link #forget} is called for it.
   *
   * @param sessionId the session's id, the process id of its leader
   */
  synchronized void watch(long sessionId) {
    if (sessions.add(sessionId)) {
      send("+" + sessionId + "\n");
    }
  }

  /**
   * Takes the session {@code sessionId} off the list, once it has ended with everything in it.
   *
   * @param sessionId the session's id
   */
  synchronized void forget(long sessionId) {
    if (sessions.remove(sessionId)) {
      send("-" + sessionId + "\n");
    }
  }

  /** The helper's process id, or -1 if none runs (tests). */
  synchronized long helperPid() {
    return helper != null && helper.isAlive() ? helper.pid() : -1;
  }

  /**
   * Closes the pipe as the kernel does when this JVM dies, without taking any session off the
   * list: the helper ends them all and exits (tests).
   */
  synchronized void closeAsIfDead() {
    if (pipe != null) {
      try {
        pipe.close();
      } catch (IOException e) {
        log.debug("Closing the session reaper's pipe: {}", e.getMessage());
      }
      pipe = null;
      helper = null;
    }
  }

  private void send(String line) {
    if (pipe != null) {
      try {
        pipe.write(line.getBytes(StandardCharsets.US_ASCII));
        pipe.flush();
        return;
      } catch (IOException e) {
        log.warn("The helper that ends this worker's commands if the worker dies has gone ({});"
            + " starting another", e.getMessage());
        pipe = null;
        helper = null;
      }
    }
    // no helper yet, or it died: start one and list every running session to it
    if (failedAt != 0 && System.nanoTime() - failedAt < RETRY_PAUSE_NANOS) {
      return; // a later watch or forget tries again
    }
    try {
      start();
      StringBuilder all = new StringBuilder();
      for (long s : sessions) {
        all.append('+').append(s).append('\n');
      }
      pipe.write(all.toString().getBytes(StandardCharsets.US_ASCII));
      pipe.flush();
      failedAt = 0;
      warned = false;
    } catch (IOException e) {
      pipe = null;
      helper = null;
      failedAt = System.nanoTime() | 1;
      if (!warned) {
        warned = true;
        log.warn("Cannot start the helper that ends this worker's commands if the worker dies ({});"
            + " what a command started may outlive a worker killed with SIGKILL", e.getMessage());
      }
    }
  }

  private void start() throws IOException {
    List<String> command = new java.util.ArrayList<>(sessionLauncher);
    command.addAll(List.of("/bin/sh", "-c", SCRIPT, "tether-session-reaper", scanProc ? "proc" : "groups"));
    Process p = new ProcessBuilder(command)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .redirectError(ProcessBuilder.Redirect.DISCARD)
        .start();
    helper = p;
    pipe = p.getOutputStream();
    log.debug("Started the session reaper, process {}", p.pid());
  }
}
