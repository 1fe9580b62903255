package dev.tether.cli.internal;

import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Finds the processes still in a command's session, from Linux's {@code /proc}.
 *
 * <p>Each command starts as the leader of a session of its own ({@code setsid}), whose id is the
 * command's process id. Everything it starts stays in that session unless it calls {@code
 * setsid()} itself: also the processes that a parent-based walk ({@link
 * ProcessHandle#descendants()}) cannot see any more because their parent exited and they were
 * re-parented (a double fork, {@code (cmd &)}, {@code nohup cmd &} in a subshell), and the
 * background children of a command that has exited. Linux does not reuse a process id while it
 * still names a session with members, so the members found are the command's.
 *
 * <p>Where {@code /proc} cannot be read (not Linux), or shows another process id namespace than
 * this JVM's, nothing is found, and the runner falls back on the parent-based walk alone.
 */
final class SessionMembers {
  private static final String PROC_PATH = "/proc/";
  private static final File PROC = new File(PROC_PATH);
  private static final String LAST_PID = "/proc/sys/kernel/ns_last_pid";

  /**
   * Whether {@code /proc} shows this JVM's own process id namespace: {@code /proc/self} names this
   * process. Not so (a {@code /proc} mounted for another namespace), its ids would name other
   * processes, and nothing is read from it.
   */
  private static final boolean OURS = procIsOurs();

  private SessionMembers() {}

  /** Whether {@code /proc} shows this JVM's process id namespace, so that it is read at all. */
  static boolean readable() {
    return OURS;
  }

  private static boolean procIsOurs() {
    try {
      return Long.parseLong(java.nio.file.Files.readSymbolicLink(java.nio.file.Path.of(PROC_PATH, "self"))
          .toString()) == ProcessHandle.current().pid();
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /**
   * Returns the live processes (not zombies) whose session id is {@code sessionId}, the leader
   * included if it still runs. Empty where {@code /proc} cannot be read.
   *
   * @param sessionId a session id: the process id of the command that leads it
   * @return the members found
   */
  static List<ProcessHandle> of(long sessionId) {
    return scan(sessionId, false);
  }

  /**
   * As {@link #of}, reading only the processes whose ids were handed out after {@code sessionId}
   * by the kernel's counter ({@code ns_last_pid}, wrapping at {@code
   * pid_max}): every member started after the leader, so this finds them all unless the kernel
   * handed out more than {@code pid_max} ids (32,768 by default) since the leader started. For a
   * command that ran briefly; a scan reads about 10 microseconds per process, most of them old.
   *
   * @param sessionId a session id: the process id of the command that leads it
   * @return the members found
   */
  static List<ProcessHandle> ofShortLived(long sessionId) {
    return scan(sessionId, true);
  }

  /**
   * Whether {@code pid} is a zombie (ended, not yet collected by its parent); false if it cannot
   * be read.
   *
   * @param pid a process id
   * @return true for a zombie
   */
  static boolean isZombie(long pid) {
    if (!OURS) {
      return false;
    }
    long[] ids = readStat(pid, new byte[STAT_BYTES]);
    return ids != null && ids[1] == 'Z';
  }

  private static List<ProcessHandle> scan(long sessionId, boolean newerOnly) {
    List<ProcessHandle> members = new ArrayList<>();
    String[] names = OURS ? PROC.list() : null;
    if (names == null) {
      return members;
    }
    long last = newerOnly ? lastPid() : -1;
    byte[] buf = new byte[STAT_BYTES];
    for (String name : names) {
      long pid = pidOf(name);
      if (pid < 0 || (last >= 0 && !handedOutAfter(pid, sessionId, last))) {
        continue;
      }
      long[] ids = readStat(pid, buf);
      if (ids != null && ids[0] == sessionId && ids[1] != 'Z') {
        ProcessHandle.of(pid).ifPresent(members::add);
      }
    }
    return members;
  }

  /** Bytes read of a {@code stat} line: the fields wanted come within its first few dozen. */
  private static final int STAT_BYTES = 1024;

  /**
   * The session id and state letter of {@code pid} from its {@code /proc/PID/stat}, read into
   * {@code buf}; null if it ended meanwhile, is not ours to read, or the line cannot be parsed.
   */
  private static long[] readStat(long pid, byte[] buf) {
    int n;
    try (FileInputStream in = new FileInputStream(PROC_PATH + pid + "/stat")) {
      n = in.readNBytes(buf, 0, buf.length);
    } catch (IOException e) {
      return null;
    }
    return parseStat(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
  }

  /**
   * Whether {@code pid} lies in the ids handed out after {@code first} up to {@code last}, on the
   * kernel's counter that wraps around.
   *
   * @param pid a process id
   * @param first the id handed out first
   * @param last the id handed out last
   * @return true if {@code pid} came after {@code first}, counting around a wrap
   */
  static boolean handedOutAfter(long pid, long first, long last) {
    return last >= first ? pid > first && pid <= last : pid > first || pid <= last;
  }

  /** The kernel's last handed-out process id, or -1 if it cannot be read. */
  private static long lastPid() {
    try (FileInputStream in = new FileInputStream(LAST_PID)) {
      byte[] b = in.readNBytes(32);
      return Long.parseLong(new String(b, StandardCharsets.ISO_8859_1).strip());
    } catch (IOException | NumberFormatException e) {
      return -1;
    }
  }

  /** The process id a {@code /proc} entry names, or -1 if it names none. */
  private static long pidOf(String name) {
    if (name.isEmpty() || name.length() > 18) {
      return -1;
    }
    long pid = 0;
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c < '0' || c > '9') {
        return -1;
      }
      pid = pid * 10 + (c - '0');
    }
    return pid;
  }


  /**
   * Parses a {@code /proc/PID/stat} line: {@code pid (comm) state ppid pgrp session ...}.
   *
   * @param stat the line
   * @return the session id and the state letter, or null if the line is not such a line
   */
  static long[] parseStat(String stat) {
    int close = stat.lastIndexOf(')');
    if (close < 0 || close + 2 >= stat.length()) {
      return null;
    }
    String[] fields = stat.substring(close + 2).split(" ", 5);
    if (fields.length < 5 || fields[0].isEmpty()) {
      return null;
    }
    try {
      return new long[] {Long.parseLong(fields[3]), fields[0].charAt(0)};
    } catch (NumberFormatException e) {
      return null;
    }
  }
}
