package dev.tether.cli.internal;

import dev.tether.loop.WorkContext;
import dev.tether.mailbox.OutputTail;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one {@link CommandSpec} as a child process, proving progress by beating the work context on
 * every chunk of output it reads: a command that prints is a command that makes progress.
 *
 * <ul>
 *   <li>The child gets a clean environment: {@code PATH}, {@code HOME}, {@code USER}, {@code
 *       LANG}, {@code LC_ALL}, {@code TZ} and {@code TMPDIR} copied from this process when set,
 *       plus the variables given to {@link #run}, plus the spec's additions. Standard input is
 *       empty. No shell runs unless the spec asks for one.
 *   <li>Where util-linux {@code setpriv} supports {@code --pdeathsig} (probed once), the child
 *       starts as {@code setpriv --pdeathsig KILL -- argv...}: the kernel sends it SIGKILL if the
 *       worker dies, even by SIGKILL, so a redelivered item never runs beside an orphan of its
 *       previous delivery. The signal goes to the direct child, the program itself; what it started
 *       (a shell's children, a pipeline) is ended by the {@link SessionReaper}'s helper, which
 *       watches the sessions of the commands running. Without {@code setpriv} this is logged once
 *       as a warning.
 *   <li>Where util-linux {@code setsid} works, the child starts in a session and process group of
 *       its own: a terminal's Ctrl-C or hang-up reaches the worker, which drains, and not its
 *       commands directly.
 *   <li>Standard output and error are read in chunks on two {@code tether-output-*} threads; each
 *       chunk lands in a bounded tail, is counted, and beats. The tails are reported to the work
 *       context ({@link WorkContext#reportOutput}), so that the store keeps them with the
 *       delivery: on each lease extension while it runs, and when it ends, however it ends.
 *   <li>With liveness {@code process}, the context is also beaten every {@code processBeatInterval}
 *       while the child is alive, for commands that print nothing while they work (liveness then
 *       proves only that the process runs, not that it progresses).
 *   <li>When the lease is lost, shutdown is requested, the deadline passes, or the extra stop
 *       signal says so, the whole process tree is ended: SIGTERM to the child, its descendants
 *       and every process still in its session (also those whose parent exited, as after a double
 *       fork), then SIGKILL to whatever is still alive after the grace period.
 *   <li>A command that exits on its own is over, with all it started: processes it left running
 *       in its session (background jobs) are ended the same way, so that nothing of a finished
 *       delivery runs on unsupervised beside the next. A process that left the session ({@code
 *       setsid}, as daemons do) is not followed.
 * </ul>
 *
 * <p>Thread-safe: {@link #run} may be called by many threads at once, each for its own command;
 * it blocks until the child and its output readers have finished.
 */
public final class ProcessRunner {
  private static final Logger log = LoggerFactory.getLogger(ProcessRunner.class);

  /** Environment variables copied from the worker into every child, when set. */
  public static final List<String> INHERITED_ENV =
      List.of("PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ", "TMPDIR");

  /** Default bytes of each stream kept in the result. */
  public static final int DEFAULT_TAIL_BYTES = 4096;

  /** Default time between SIGTERM and SIGKILL. */
  public static final Duration DEFAULT_KILL_GRACE = Duration.ofSeconds(3);

  private static final int CHUNK = 8192;

  /**
   * Commands that ran less than this long are checked for processes left in their session among
   * the process ids handed out since they started: the kernel cannot have handed out {@code
   * pid_max} ids (32,768 by default) in that time.
   */
  private static final long SHORT_LIVED_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** Receives each output chunk, for narration and logs. Called on reader threads; must be fast. */
  @FunctionalInterface
  public interface OutputListener {
    /** A listener that ignores everything. */
    OutputListener NONE = (stream, bytes, len) -> {};

    /**
     * A chunk was read.
     *
     * @param stream {@code stdout} or {@code stderr}
     * @param bytes the buffer (valid only during the call)
     * @param len bytes used
     */
    void chunk(String stream, byte[] bytes, int len);
  }

  private final int tailBytes;
  private final Duration killGrace;
  private final Duration processBeatInterval;
  private final Duration pollInterval;

  /**
   * Creates a runner.
   *
   * @param tailBytes bytes of each stream to keep, at least 1
   * @param killGrace time between SIGTERM and SIGKILL, >= 0
   * @param processBeatInterval beat interval for liveness {@code process}, > 0
   * @throws IllegalArgumentException if a value is out of range
   */
  public ProcessRunner(int tailBytes, Duration killGrace, Duration processBeatInterval) {
    if (tailBytes < 1) {
      throw new IllegalArgumentException("tailBytes must be >= 1, was " + tailBytes);
    }
    if (killGrace.isNegative()) {
      throw new IllegalArgumentException("killGrace must be >= 0, was " + killGrace);
    }
    if (processBeatInterval.isNegative() || processBeatInterval.isZero()) {
      throw new IllegalArgumentException(
          "processBeatInterval must be > 0, was " + processBeatInterval);
    }
    this.tailBytes = tailBytes;
    this.killGrace = killGrace;
    this.processBeatInterval = processBeatInterval;
    this.pollInterval = Duration.ofMillis(Math.min(100, Math.max(10, processBeatInterval.toMillis())));
  }

  /**
   * Runs {@code spec} to its end or until it must stop.
   *
   * @param spec what to run
   * @param context the work's heartbeat and stop signals
   * @param extraEnv variables added to the child's environment (before the spec's additions)
   * @param stopSignal an extra stop condition (for example a lease found lost by probing the
   *     store); checked every poll interval
   * @param listener receives each chunk
   * @return how the run ended; never throws for a failing command
   * @throws InterruptedException if the calling thread is interrupted (the process tree is killed
   *     first)
   */
  public CommandResult run(
      CommandSpec spec,
      WorkContext context,
      Map<String, String> extraEnv,
      BooleanSupplier stopSignal,
      OutputListener listener)
      throws InterruptedException {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(context, "context");
    List<String> argv = spec.processArgv();
    ProcessBuilder pb = new ProcessBuilder();
    Map<String, String> env = pb.environment();
    env.clear();
    for (String name : INHERITED_ENV) {
      String v = System.getenv(name);
      if (v != null) {
        env.put(name, v);
      }
    }
    env.putIfAbsent("PATH", "/usr/local/bin:/usr/bin:/bin");
    env.putAll(extraEnv);
    env.putAll(spec.env());
    pb.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
    List<String> launcher = Launchers.PREFIX;
    if (launcher.isEmpty()) {
      pb.command(argv);
    } else {
      // setpriv reports a missing program only once started: check first, as ProcessBuilder does.
      String missing = missingProgram(argv.get(0), env.get("PATH"));
      if (missing != null) {
        return new CommandResult(-1, 0, "", "", 0, 0, 0, null, argv.get(0) + ": " + missing);
      }
      List<String> wrapped = new ArrayList<>(launcher);
      wrapped.addAll(argv);
      pb.command(wrapped);
    }
    long start = System.nanoTime();
    Process process;
    try {
      process = pb.start();
    } catch (IOException e) {
      return new CommandResult(
          -1, 0, "", "", 0, 0, 0, null, argv.get(0) + ": " + e.getMessage());
    }
    SessionReaper reaper = SessionReaper.shared(); // null where commands get no session
    if (reaper != null) {
      reaper.watch(process.pid());
    }
    try {
      return watch(spec, context, stopSignal, listener, process, start);
    } catch (RuntimeException | Error e) {
      killTree(process); // not left running unwatched: it has been started, its item fails
      throw e;
    } finally {
      if (reaper != null) {
        reaper.forget(process.pid()); // its session has ended, with all it left running
      }
    }
  }

  /** Watches the started {@code process} to its end; see {@link #run}. */
  private CommandResult watch(CommandSpec spec, WorkContext context, BooleanSupplier stopSignal,
      OutputListener listener, Process process, long start) throws InterruptedException {
    TailBuffer out = new TailBuffer(tailBytes);
    TailBuffer err = new TailBuffer(tailBytes);
    long[] chunks = new long[2]; // chunks read, System.nanoTime() of the last one
    Object chunkLock = new Object();
    context.reportOutput(() -> {
      Duration sinceLastOutput;
      synchronized (chunkLock) {
        sinceLastOutput = chunks[0] == 0 ? null : Duration.ofNanos(System.nanoTime() - chunks[1]);
      }
      return new OutputTail(out.text(), err.text(), out.total() + err.total(), sinceLastOutput,
          context.heartbeat().elapsed());
    });
    String tag = context.messageId().orElse("p" + process.pid());
    Thread outReader =
        reader("tether-output-" + tag + "-stdout", process.getInputStream(), out, "stdout",
            context, listener, chunks, chunkLock);
    Thread errReader =
        reader("tether-output-" + tag + "-stderr", process.getErrorStream(), err, "stderr",
            context, listener, chunks, chunkLock);
    boolean processLiveness = CommandSpec.LIVENESS_PROCESS.equals(spec.liveness());
    long nextProcessBeat = System.nanoTime() + processBeatInterval.toNanos();
    String stopped = null;
    long flushedChunks = 0;
    AtomicReference<CompletableFuture<Boolean>> flushing = new AtomicReference<>();
    long[] attempt = {0, System.nanoTime() - processBeatInterval.toNanos()}; // chunks, when
    try {
      while (!process.waitFor(pollInterval.toMillis(), TimeUnit.MILLISECONDS)) {
        flushedChunks = flushQuietOutput(context, chunks, chunkLock, flushedChunks, flushing, attempt, tag);
        if (context.isLeaseLost() || stopSignal.getAsBoolean()) {
          stopped = CommandResult.STOPPED_LEASE_LOST;
        } else if (context.isShutdownRequested()) {
          stopped = CommandResult.STOPPED_SHUTDOWN;
        } else if (context.shouldStop()) {
          stopped = CommandResult.STOPPED_DEADLINE;
        }
        if (stopped != null) {
          log.info("Stopping process {} ({}): {}", process.pid(), spec.display(),
              context.isCancelled() ? "cancelled" : stopped);
          killTree(process);
          break;
        }
        if (processLiveness && System.nanoTime() - nextProcessBeat >= 0) {
          context.beat();
          nextProcessBeat = System.nanoTime() + processBeatInterval.toNanos();
        }
      }
    } catch (InterruptedException e) {
      killTree(process);
      throw e;
    } finally {
      finishReaders(process, start, outReader, errReader);
    }
    int exit = process.exitValue();
    long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    long n;
    synchronized (chunkLock) {
      n = chunks[0];
    }
    return new CommandResult(
        exit, took, out.text(), err.text(), out.total(), err.total(), n, stopped, null);
  }

  /**
   * Once the command has been quiet for {@code processBeatInterval} after output that no lease
   * extension may have carried, writes that output to the store (without extending the lease),
   * so that a command that hangs shows what it printed last. The write runs on a thread of its
   * own, one at a time, so that a store that stopped answering never holds up this loop's lease
   * checks and kills; a write that failed is tried again a {@code processBeatInterval} later (a
   * hung command makes no more extensions that would carry it). Returns the chunk count last
   * written.
   */
  private long flushQuietOutput(WorkContext context, long[] chunks, Object chunkLock, long flushed,
      AtomicReference<CompletableFuture<Boolean>> flushing, long[] attempt, String tag) {
    CompletableFuture<Boolean> inFlight = flushing.get();
    if (inFlight != null) {
      if (!inFlight.isDone()) {
        return flushed;
      }
      if (inFlight.join()) {
        flushed = attempt[0];
      }
      flushing.set(null);
    }
    long n;
    long last;
    synchronized (chunkLock) {
      n = chunks[0];
      last = chunks[1];
    }
    long now = System.nanoTime();
    if (n == flushed || now - last < processBeatInterval.toNanos()
        || now - attempt[1] < processBeatInterval.toNanos()) {
      return flushed;
    }
    attempt[0] = n;
    attempt[1] = now;
    flushing.set(CompletableFuture.supplyAsync(() -> {
      try {
        context.flushOutput();
        return true;
      } catch (RuntimeException e) {
        log.debug("Writing the output of {} failed; trying again: {}",
            context.messageId().orElse("?"), e.getMessage());
        return false;
      }
    }, r -> {
      Thread t = new Thread(r, "tether-output-" + tag + "-flush");
      t.setDaemon(true);
      t.start();
    }));
    return flushed;
  }

  /** The command prefixes, probed once, when a command first starts (the holder idiom). */
  private static final class Launchers {
    static final List<String> PARENT_DEATH = probeParentDeathLauncher();
    static final List<String> SESSION = probeSessionLauncher();
    /** What every command starts behind: both, in that order. */
    static final List<String> PREFIX = concat(PARENT_DEATH, SESSION);

    private static List<String> concat(List<String> a, List<String> b) {
      List<String> all = new ArrayList<>(a);
      all.addAll(b);
      return List.copyOf(all);
    }
  }

  /**
   * The command prefix that starts a child in a session (and process group) of its own ({@code
   * setsid}, util-linux), or an empty list where none works. In the worker's process group a
   * command got the worker's terminal signals directly: Ctrl-C in a terminal (SIGINT to the whole
   * foreground group) or a closing terminal (SIGHUP) killed every running command at once, which
   * then failed and was charged, where the worker promises a drain and hand-backs. Probed once.
   * (A child that Java starts is never a group leader, so {@code setsid} does not fork: the
   * process the worker watches and signals is the command itself.)
   */
  static List<String> sessionLauncher() {
    return Launchers.SESSION;
  }

  private static List<String> probeSessionLauncher() {
    for (String path : List.of("/usr/bin/setsid", "/bin/setsid")) {
      if (!new File(path).canExecute()) {
        continue;
      }
      try {
        if (probeExit(List.of(path, "true")) == 0) {
          return List.of(path);
        }
      } catch (IOException e) {
        log.debug("Cannot run {}: {}", path, e.getMessage());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return List.of();
      }
    }
    log.warn("No working setsid (util-linux) found: commands share the worker's process group, so"
        + " Ctrl-C or a closing terminal signals them directly instead of letting the worker drain");
    return List.of();
  }

  /**
   * The command prefix that gives a child the parent-death signal SIGKILL ({@code setpriv
   * --pdeathsig KILL --}), or an empty list where no {@code setpriv} supports it. Probed once per
   * process by running {@code setpriv --pdeathsig KILL -- true}.
   */
  static List<String> parentDeathLauncher() {
    return Launchers.PARENT_DEATH;
  }

  private static List<String> probeParentDeathLauncher() {
    for (String path : List.of("/usr/bin/setpriv", "/bin/setpriv")) {
      File f = new File(path);
      if (!f.canExecute()) {
        continue;
      }
      List<String> prefix = List.of(path, "--pdeathsig", "KILL", "--");
      List<String> probe = new ArrayList<>(prefix);
      probe.add("true");
      try {
        int exit = probeExit(probe);
        if (exit == 0) {
          log.debug("Commands start through {}: they die with the worker", prefix);
          return prefix;
        }
        log.warn("{} --pdeathsig does not work here (exit {}); commands of a worker killed with "
            + "SIGKILL keep running unless the session reaper ends them (setsid and /bin/sh)",
            path, exit < 0 ? "none" : exit);
        return List.of();
      } catch (IOException e) {
        log.warn("Cannot run {} ({}); commands of a worker killed with SIGKILL keep running unless"
            + " the session reaper ends them (setsid and /bin/sh)", path, e.getMessage());
        return List.of();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return List.of();
      }
    }
    log.warn("No setpriv (util-linux) found: commands of a worker killed with SIGKILL keep running"
        + " after it unless the session reaper ends them (setsid and /bin/sh)");
    return List.of();
  }

  /** Runs a probe command, its output discarded; its exit status, or -1 if it took over 10 s. */
  private static int probeExit(List<String> command) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(command)
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .start();
    if (p.waitFor(10, TimeUnit.SECONDS)) {
      return p.exitValue();
    }
    p.destroyForcibly();
    return -1;
  }

  /**
   * Returns why {@code program} cannot be executed with {@code path} as PATH, or null if it can
   * (a name without a slash is looked up in PATH, as execvp does).
   */
  static String missingProgram(String program, String path) {
    if (program.contains("/")) {
      File f = new File(program);
      if (!f.isFile()) {
        return "Cannot run program \"" + program + "\": no such file";
      }
      return f.canExecute() ? null : "Cannot run program \"" + program + "\": permission denied";
    }
    for (String dir : (path == null ? "" : path).split(":")) {
      File f = new File(dir.isEmpty() ? "." : dir, program);
      if (f.isFile() && f.canExecute()) {
        return null;
      }
    }
    return "Cannot run program \"" + program + "\": not found in PATH " + path;
  }

  private static Thread reader(
      String name,
      InputStream in,
      TailBuffer tail,
      String stream,
      WorkContext context,
      OutputListener listener,
      long[] chunks,
      Object chunkLock) {
    Thread t =
        new Thread(
            () -> {
              byte[] buf = new byte[CHUNK];
              try (InputStream s = in) {
                int r;
                while ((r = s.read(buf)) >= 0) {
                  if (r == 0) {
                    continue;
                  }
                  tail.write(buf, 0, r); // first, so that an extension on this beat carries it
                  synchronized (chunkLock) {
                    chunks[0]++;
                    chunks[1] = System.nanoTime();
                  }
                  context.beat(); // proof of work: the command produced output
                  try {
                    listener.chunk(stream, buf, r);
                  } catch (RuntimeException e) {
                    log.warn("Output listener failed on {}; ignored", stream, e);
                  }
                }
              } catch (IOException e) {
                log.debug("Reading {} ended: {}", stream, e.getMessage());
              } catch (RuntimeException e) {
                log.error("Reading {} failed; output from here on is lost", stream, e);
              }
            },
            name);
    t.setDaemon(true);
    t.start();
    return t;
  }

  /**
   * Waits for the process to end (killing it if it must), ends what it left running in its
   * session, then waits for the readers to drain. Never throws {@link InterruptedException}: the
   * command has ended either way, and its result must not be lost to an interrupt that came while
   * its output was being read to the end (the flag is set again on return).
   */
  private void finishReaders(Process process, long start, Thread outReader, Thread errReader) {
    boolean interrupted = false;
    while (true) {
      try {
        if (!process.waitFor(killGrace.toMillis() + 5000, TimeUnit.MILLISECONDS)) {
          killTree(process);
          process.waitFor();
        }
        break;
      } catch (InterruptedException e) {
        interrupted = true;
        killTree(process);
      }
    }
    List<ProcessHandle> left =
        sessionOf(process, System.nanoTime() - start < SHORT_LIVED_NANOS);
    if (!left.isEmpty()) {
      log.info("Process {} exited leaving {} in its session (pids {}); ending {}", process.pid(),
          left.size() == 1 ? "a process" : left.size() + " processes",
          left.stream().map(h -> Long.toString(h.pid())).collect(java.util.stream.Collectors.joining(", ")),
          left.size() == 1 ? "it" : "them");
      interrupted |= end(left, () -> sessionOf(process, false));
    }
    // Processes that left the session (setsid) may keep the pipes open: bound the wait, then close.
    long readDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
    interrupted |= joinUntil(outReader, readDeadline) | joinUntil(errReader, readDeadline);
    if (outReader.isAlive() || errReader.isAlive()) {
      log.warn(
          "Output of process {} still open after it exited (a descendant that left its session?); closing",
          process.pid());
      closeQuietly(process.getInputStream());
      closeQuietly(process.getErrorStream());
      long closeDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
      interrupted |= joinUntil(outReader, closeDeadline) | joinUntil(errReader, closeDeadline);
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Joins {@code t} until it ends or {@code deadline} ({@link System#nanoTime()}) passes, an
   * interrupt notwithstanding (the output is read to its end either way); true if interrupted.
   */
  private static boolean joinUntil(Thread t, long deadline) {
    boolean interrupted = false;
    while (t.isAlive()) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        break;
      }
      try {
        t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    return interrupted;
  }

  private static void closeQuietly(InputStream in) {
    try {
      in.close();
    } catch (IOException e) {
      log.debug("closing a process stream failed: {}", e.getMessage());
    }
  }

  /**
   * The live processes of the session the command leads (see {@link SessionMembers}); empty where
   * commands do not start in a session of their own. After a command that ran briefly only the
   * process ids handed out since it started are read (a scan costs about 10 us per process).
   */
  private static List<ProcessHandle> sessionOf(Process process, boolean ranBriefly) {
    if (Launchers.SESSION.isEmpty()) {
      return List.of();
    }
    return ranBriefly ? SessionMembers.ofShortLived(process.pid()) : SessionMembers.of(process.pid());
  }

  /**
   * Ends the process tree: SIGTERM to the child, its descendants and every process in its session
   * (also those re-parented away from it), SIGKILL to whatever is still alive after the grace
   * period. Blocks at most about the grace period.
   *
   * @param process the child
   */
  void killTree(Process process) {
    List<ProcessHandle> tree = new ArrayList<>();
    tree.add(process.toHandle());
    if (end(tree, () -> {
      List<ProcessHandle> all = new ArrayList<>();
      process.descendants().forEach(all::add);
      all.addAll(sessionOf(process, false));
      return all;
    })) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * SIGTERM to {@code first} and to what {@code more} finds, a wait of up to the grace period,
   * then SIGKILL to whatever is still alive (asking {@code more} again, for processes started
   * meanwhile). Returns whether the thread was interrupted (the waits are cut short then).
   */
  private boolean end(List<ProcessHandle> first, java.util.function.Supplier<List<ProcessHandle>> more) {
    Map<Long, ProcessHandle> tree = new java.util.LinkedHashMap<>();
    for (ProcessHandle h : more.get()) {
      tree.putIfAbsent(h.pid(), h);
    }
    for (ProcessHandle h : first) {
      tree.putIfAbsent(h.pid(), h);
    }
    for (ProcessHandle h : tree.values()) {
      h.destroy();
    }
    boolean interrupted = !awaitEnded(tree.values(), System.nanoTime() + killGrace.toNanos());
    // processes started meanwhile are caught here too
    for (ProcessHandle h : more.get()) {
      tree.putIfAbsent(h.pid(), h);
    }
    List<ProcessHandle> killed = new ArrayList<>();
    for (ProcessHandle h : tree.values()) {
      if (running(h)) {
        log.info("Process {} ignored SIGTERM for {}; killing it", h.pid(), dev.tether.DurationText.of(killGrace));
        h.destroyForcibly();
        killed.add(h);
      }
    }
    // SIGKILL is asynchronous: one short wait for all of them
    if (!killed.isEmpty() && !awaitEnded(killed, System.nanoTime() + TimeUnit.SECONDS.toNanos(1))) {
      interrupted = true;
    }
    for (ProcessHandle h : killed) {
      if (running(h)) {
        log.debug("Process {} not yet gone 1 s after SIGKILL", h.pid());
      }
    }
    return interrupted;
  }

  /**
   * Waits until none of {@code processes} runs any more, or until {@code deadline} ({@link
   * System#nanoTime()}); false if interrupted (the wait then ends).
   */
  private static boolean awaitEnded(java.util.Collection<ProcessHandle> processes, long deadline) {
    long pauseMillis = 2;
    while (true) {
      boolean anyRunning = false;
      for (ProcessHandle h : processes) {
        if (running(h)) {
          anyRunning = true;
          break;
        }
      }
      long left = deadline - System.nanoTime();
      if (!anyRunning || left <= 0) {
        return true;
      }
      try {
        Thread.sleep(Math.max(1, Math.min(pauseMillis, TimeUnit.NANOSECONDS.toMillis(left))));
      } catch (InterruptedException e) {
        return false;
      }
      pauseMillis = Math.min(pauseMillis * 2, 50);
    }
  }

  /**
   * Whether {@code h} still runs. A zombie does not: it has ended and only waits for its parent
   * to collect it, which for an orphan is PID 1 (in a container that may be this very JVM, which
   * never does); {@link ProcessHandle#isAlive} counts it alive.
   */
  private static boolean running(ProcessHandle h) {
    return h.isAlive() && !SessionMembers.isZombie(h.pid());
  }
}
