package dev.tether.cli.internal;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 * has ended and the runner has ended what it found left in its session. When the worker dies the
 * kernel closes the pipe; the helper reads its end and sends SIGKILL to every process of the
 * sessions still listed: their process groups first, then, where {@code /proc} shows this process
 * id namespace, every process whose session id is one of them (also those that moved to another
 * process group, as a shell with job control moves its jobs), scanning again while it found any,
 * up to 50 times. A process that started a session of its own ({@code setsid}, as daemons do) is
 * not followed, as by the worker itself, nor one the user may not signal. The helper ignores
 * SIGINT, SIGHUP and SIGTERM, and exits as soon as the pipe ends with no session listed (a worker
 * that drained and exited normally); a JVM that exits with commands still running (a drain that
 * timed out, the watchdog) has them ended by it too.
 *
 * <p>Where {@code /proc} cannot be read, the runner cannot tell whether a command left processes
 * in its session, and takes it off once the command itself has ended: what it left then outlives
 * a worker killed with SIGKILL, and only the command's process group is ended.
 *
 * <p>One helper per JVM, started with the first command ({@link #shared()}), only where commands
 * get sessions of their own ({@code setsid}); costs a {@code sh} process (about 1 MB) and a few
 * bytes written per command. If the helper dies, the next write starts another and lists the
 * running sessions to it again; if one cannot be started (it did not say it was ready within 5
 * s), that is logged once and tried again after 10 s at the earliest. A helper that stops reading (stopped with
 * SIGSTOP) holds up command starts once its pipe is full, after about 7,000 commands.
 *
 * <p>Thread-safe.
 */
final class SessionReaper {
  private static final Logger log = LoggerFactory.getLogger(SessionReaper.class);

  /**
   * The helper's program ({@code sh -c}); its first argument says whether {@code /proc} may be
   * scanned ({@code proc}) or only process groups signalled ({@code groups}). It writes one line,
   * {@code r}, once it ignores the signals, and nothing else. Session ids 0 and 1 are refused
   * ({@code kill -KILL -1} would reach every process the user may signal). A stat line is read
   * whole, also when the process name holds a line break; globbing is off while it is split.
   */
  static final String SCRIPT = String.join("\n",
      "trap '' INT HUP TERM PIPE",
      "echo r",
      "s=' '",
      "while IFS= read -r l; do",
      "  x=${l#?}",
      "  case $x in ''|*[!0-9]*|0|1) continue ;; esac",
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
      "    { IFS= read -r line; while IFS= read -r m; do line=\"$line $m\"; done; } 2>/dev/null < \"$f\" || continue",
      "    set -f; set -- ${line##*') '}; set +f",
      "    [ \"$1\" = Z ] && continue",
      "    case $s in *\" $4 \"*) p=${f#/proc/}; kill -KILL \"${p%/stat}\" 2>/dev/null && found=1 ;; esac",
      "  done",
      "  [ -z \"$found\" ] && exit 0",
      "  i=$((i+1))",
      "done",
      "");

  /** How long after a helper failed to start no other start is tried (a later write tries again). */
  private static final long RETRY_PAUSE_NANOS = TimeUnit.SECONDS.toNanos(10);

  /** How long a starting helper has to say it is ready. */
  private static final long READY_NANOS = TimeUnit.SECONDS.toNanos(5);

  private final List<String> sessionLauncher;
  private final boolean scanProc;
  /**
   * The sessions listed, each with how many commands of that id run (more than one only if a
   * process id was handed out again before the first command's session was taken off).
   */
  private final Map<Long, Integer> sessions = new LinkedHashMap<>();
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
    sessions.merge(sessionId, 1, Integer::sum);
    send("+" + sessionId + "\n");
  }

  /**
   * Takes the session {@code sessionId} off the list (once), when the command that leads it has
   * ended and the runner has ended what it found left in the session.
   *
   * @param sessionId the session's id
   */
  synchronized void forget(long sessionId) {
    Integer n = sessions.get(sessionId);
    if (n == null) {
      return;
    }
    if (n == 1) {
      sessions.remove(sessionId);
    } else {
      sessions.put(sessionId, n - 1);
    }
    send("-" + sessionId + "\n");
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
      drop();
    }
  }

  /** Lets go of the helper (its pipe is closed or broken). */
  private void drop() {
    if (helper != null) {
      try {
        helper.getInputStream().close();
      } catch (IOException e) {
        log.debug("Closing the session reaper's output: {}", e.getMessage());
      }
    }
    pipe = null;
    helper = null;
  }

  private void send(String line) {
    if (pipe != null) {
      try {
        pipe.write(line.getBytes(StandardCharsets.US_ASCII));
        pipe.flush();
        return;
      } catch (IOException e) {
        drop();
        log.warn("The helper that ends this worker's commands if the worker dies has gone ({});"
            + " starting another", e.getMessage());
      }
    }
    // no helper yet, or it died: start one and list every running session to it
    if (failedAt != 0 && System.nanoTime() - failedAt < RETRY_PAUSE_NANOS) {
      return;
    }
    try {
      start();
      StringBuilder all = new StringBuilder();
      for (Map.Entry<Long, Integer> e : sessions.entrySet()) {
        for (int i = 0; i < e.getValue(); i++) {
          all.append('+').append(e.getKey()).append('\n');
        }
      }
      pipe.write(all.toString().getBytes(StandardCharsets.US_ASCII));
      pipe.flush();
      failedAt = 0;
      warned = false;
    } catch (IOException e) {
      drop();
      failed(e.getMessage());
    }
  }

  /** A helper could not be started: no other start for a while, one warning. */
  private void failed(String why) {
    failedAt = System.nanoTime() | 1;
    if (!warned) {
      warned = true;
      log.warn("Cannot keep the helper that ends this worker's commands if the worker dies ({});"
          + " what a command started may outlive a worker killed with SIGKILL; trying again in"
          + " {} s at the earliest", why, TimeUnit.NANOSECONDS.toSeconds(RETRY_PAUSE_NANOS));
    }
  }

  /**
   * Starts a helper (in a session of its own, with an empty environment, in {@code /}) and waits
   * until it says it ignores the signals.
   *
   * @throws IOException if it cannot start or does not say so in time
   */
  private void start() throws IOException {
    List<String> command = new ArrayList<>(sessionLauncher);
    command.addAll(List.of("/bin/sh", "-c", SCRIPT, "tether-session-reaper", scanProc ? "proc" : "groups"));
    ProcessBuilder pb = new ProcessBuilder(command)
        .directory(new File("/"))
        .redirectError(ProcessBuilder.Redirect.DISCARD);
    pb.environment().clear();
    Process p = pb.start();
    InputStream ready = p.getInputStream();
    long deadline = System.nanoTime() + READY_NANOS;
    try {
      while (ready.available() == 0) {
        if (!p.isAlive()) {
          throw new IOException("/bin/sh exited with status " + p.exitValue() + " at its start");
        }
        if (System.nanoTime() - deadline > 0) {
          throw new IOException("/bin/sh did not start within "
              + TimeUnit.NANOSECONDS.toSeconds(READY_NANOS) + " s");
        }
        Thread.sleep(2);
      }
      if (ready.read() != 'r') {
        throw new IOException("/bin/sh did not run the helper's program");
      }
    } catch (IOException | InterruptedException e) {
      p.destroyForcibly();
      ready.close();
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while it started", e);
      }
      throw (IOException) e;
    }
    helper = p;
    pipe = p.getOutputStream();
    log.debug("Started the session reaper, process {}", p.pid());
  }
}
