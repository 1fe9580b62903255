package dev.tether.loop;

import com.sun.net.httpserver.HttpHandler;
import dev.tether.Heartbeat;
import dev.tether.Ticker;
import dev.tether.health.HealthServer;
import dev.tether.health.Watchdog;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs several {@link WorkLoop}s in one process, each on its own thread, under a {@link Watchdog}
 * and behind {@link HealthServer} probes, and stops them all within one deadline.
 *
 * <pre>{@code
 * LoopGroup group = LoopGroup.builder()
 *     .loop(mainLoop)
 *     .healthPort(8080)
 *     .drainTimeout(Duration.ofSeconds(60))     // on SIGTERM, running work has 60 s to finish
 *     .shutdownTimeout(Duration.ofSeconds(75))  // and the whole shutdown 75 s
 *     .build();          // checks the timeouts (see Calibration)
 * group.run();           // blocks until every loop has ended; SIGTERM drains, then stops it
 * }</pre>
 *
 * <h2>Running</h2>
 *
 * {@link #run()} logs the effective configuration, starts the health server (if a port is set),
 * the watchdog over every loop's heartbeat (unless {@link Builder#noWatchdog()}), then each loop's
 * {@link WorkLoop#run()} on a daemon thread named {@code tether-loop-<name>}, and blocks until
 * every loop has ended; it then always stops the health server and the watchdog. A loop whose
 * {@code run()} throws is logged at ERROR and the group keeps the other loops running: the failure
 * shows as a failing readiness probe, which removes the pod from service while the other loops
 * finish their work.
 *
 * <h2>Readiness</h2>
 *
 * {@code /health/ready} answers 200 when every loop {@link WorkLoop#isRunning() is running}, no
 * shutdown was requested and every heartbeat is younger than the readiness threshold (see {@link
 * #isReady()}). The readiness threshold defaults to {@link #DEFAULT_READINESS_FRACTION} of the
 * watchdog's stall threshold, so that a probe sees the 503 and the orchestrator stops routing work
 * well before the watchdog ends the process (with the default 720 s threshold: 648 s); {@link
 * Builder#readinessThreshold(Duration)} sets it explicitly, also without a watchdog.
 * A heartbeat counts from its creation or its last beat: a loop built long before the group runs
 * should beat when its {@code run()} starts.
 *
 * <h2>Shutdown: drain, then stop</h2>
 *
 * {@link #shutdown()} (from any thread; non-blocking; idempotent) first <em>drains</em> every loop
 * ({@link WorkLoop#drain()}: no new work; a {@link MainLoop}'s running handler goes on beating and
 * extending its lease, and completes as usual), and readiness fails at once. When the drain
 * timeout ({@link Builder#drainTimeout(Duration)}, default zero) ends, every loop still running is
 * <em>shut down</em> ({@link WorkLoop#shutdown()}: its handler is asked to stop, and a {@link
 * MainLoop} hands its message back, not charged, with its latest checkpoint). {@link
 * #shutdownNow()} ends the drain at once. The group waits for all loops within <em>one</em>
 * deadline, {@code shutdownTimeout} from the request, and the drain within it ends at one instant
 * for all loops, not one timeout per loop (a loop that throws from {@code drain()} or {@code
 * shutdown()} is logged and the others are still signalled). Loops still running at the deadline
 * are logged at ERROR by name with their stack, and their threads are interrupted; {@code run()}
 * (and a {@link #shutdown(Duration)} that timed out) then waits up to 5 s more for them, so that
 * an interrupted handler's message is handed back while the store is still open, and returns
 * (their threads are daemons, so they cannot keep the JVM alive). With {@link Builder#handleSignals(boolean)} (default true) a JVM shutdown hook (SIGTERM,
 * SIGINT) does the same bounded shutdown and then waits up to 5 s for the thread that called
 * {@code run()} to end, so that what follows {@code run()} (closing the store) is done before the
 * JVM halts. The watchdog's
 * termination bypasses shutdown hooks on purpose.
 *
 * <p>A group runs once. All methods are thread-safe.
 */
public final class LoopGroup {
  /**
   * How long loops interrupted at the shutdown timeout have to end (their handlers' messages
   * handed back) before {@link #run()} returns: {@value #STRAGGLER_GRACE_SECONDS} s.
   */
  static final long STRAGGLER_GRACE_SECONDS = 5;

  private static final Duration STRAGGLER_GRACE = Duration.ofSeconds(STRAGGLER_GRACE_SECONDS);

  /** Names of the loops still running at the shutdown deadline (interrupted then). */
  private volatile List<String> interruptedAtDeadline = List.of();

  /** The thread that called {@link #run()}, which the shutdown hook lets finish (bounded). */
  private volatile Thread runCaller;

  /** Default time the loops have to stop after a shutdown request: 30 s. */
  public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);

  /** Default watchdog stall threshold: {@link Watchdog#DEFAULT_STALL_THRESHOLD}. */
  public static final Duration DEFAULT_WATCHDOG_THRESHOLD = Watchdog.DEFAULT_STALL_THRESHOLD;

  /** Default watchdog check interval: {@link Watchdog#DEFAULT_CHECK_INTERVAL}. */
  public static final Duration DEFAULT_WATCHDOG_INTERVAL = Watchdog.DEFAULT_CHECK_INTERVAL;

  /**
   * Readiness fails when a heartbeat is older than this fraction of the watchdog's stall threshold
   * (unless {@link Builder#readinessThreshold(Duration)} says otherwise): {@value}.
   */
  public static final double DEFAULT_READINESS_FRACTION = 0.9;

  private static final Logger log = LoggerFactory.getLogger(LoopGroup.class);

  private final List<WorkLoop> loops;
  private final Duration shutdownTimeout;
  private final Duration drainTimeout;
  private final Integer healthPort; // null: no health server
  private final String healthHost;
  private final Map<String, HttpHandler> healthRoutes;
  private final Duration watchdogThreshold; // null: no watchdog
  private final Duration readinessThreshold; // null: readiness ignores heartbeats
  private final Duration watchdogInterval;
  private final Ticker ticker;
  private final Watchdog.Terminator terminator;
  private final boolean handleSignals;
  private final Calibration.Mode calibrationMode;

  private final Object monitor = new Object();
  private State state = State.NEW; // guarded by monitor
  private boolean shutdownRequested; // guarded by monitor
  private long shutdownDeadlineNanos; // guarded by monitor
  private long drainDeadlineNanos; // guarded by monitor
  private boolean stopSignalled; // guarded by monitor: the drain is over, loops were shut down
  private int runningLoops; // guarded by monitor
  private final List<Thread> loopThreads = new ArrayList<>(); // guarded by monitor
  private final CountDownLatch terminated = new CountDownLatch(1);
  private final Object stragglerLock = new Object();
  private boolean stragglersHandled; // guarded by stragglerLock
  private volatile HealthServer healthServer;
  private volatile Watchdog watchdog;
  private volatile Thread shutdownHook;

  private enum State {
    NEW,
    RUNNING,
    TERMINATED
  }

  private LoopGroup(Builder b, Ticker ticker) {
    this.loops = List.copyOf(b.loops);
    this.shutdownTimeout = b.shutdownTimeout;
    this.drainTimeout = b.drainTimeout;
    this.healthPort = b.healthPort;
    this.healthHost = b.healthHost;
    this.healthRoutes = new LinkedHashMap<>(b.healthRoutes);
    this.watchdogThreshold = b.watchdogThreshold;
    this.readinessThreshold = b.effectiveReadinessThreshold();
    this.watchdogInterval = b.watchdogInterval;
    this.ticker = ticker;
    this.terminator = b.terminator;
    this.handleSignals = b.handleSignals;
    this.calibrationMode = b.calibrationMode;
  }

  /**
   * Returns a builder with the defaults: shutdown timeout {@link #DEFAULT_SHUTDOWN_TIMEOUT}, no
   * health server, watchdog at {@link #DEFAULT_WATCHDOG_THRESHOLD} / {@link
   * #DEFAULT_WATCHDOG_INTERVAL}, signal handling on, calibration violations are errors.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Runs every loop and blocks until all have ended (or, after a shutdown request, until the
   * shutdown deadline). If {@link #shutdown()} was called before, returns at once without starting
   * anything. If the calling thread is interrupted, the group is shut down and the interrupt flag
   * is restored before returning.
   *
   * @throws IllegalStateException if the group is running or has run
   * @throws java.io.UncheckedIOException if the health server cannot bind its port (no loop is
   *     started then)
   */
  public void run() {
    synchronized (monitor) {
      if (state == State.TERMINATED && shutdownRequested && loopThreads.isEmpty()) {
        log.info("Loop group was shut down before it ran; not starting any loop");
        return;
      }
      if (state != State.NEW) {
        throw new IllegalStateException(
            "LoopGroup.run() may be called only once; this group is " + state);
      }
      state = State.RUNNING;
      runCaller = Thread.currentThread();
    }
    log.info("Loop group starting: {}", describe());
    Watchdog watchdog = null;
    boolean interrupted = false;
    try {
      if (handleSignals) {
        installShutdownHook();
      }
      if (healthPort != null) {
        HealthServer.Builder hb =
            HealthServer.builder().host(healthHost).port(healthPort).readinessCheck(this::isReady);
        healthRoutes.forEach(hb::route);
        HealthServer server = hb.build();
        server.start();
        healthServer = server;
      }
      if (watchdogThreshold != null) {
        Watchdog.Builder wb =
            Watchdog.builder()
                .stallThreshold(watchdogThreshold)
                .checkInterval(watchdogInterval)
                .ticker(ticker)
                .terminator(terminator);
        for (WorkLoop loop : loops) {
          wb.heartbeat(loop.name(), loop.heartbeat());
        }
        watchdog = wb.build();
        watchdog.start();
        this.watchdog = watchdog;
      }
      startLoops();
      interrupted = awaitLoops();
    } finally {
      HealthServer server = healthServer;
      if (server != null) {
        server.stop();
      }
      if (watchdog != null) {
        watchdog.stop();
      }
      removeShutdownHook();
      synchronized (monitor) {
        state = State.TERMINATED;
      }
      terminated.countDown();
      log.info("Loop group stopped");
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private void startLoops() {
    synchronized (monitor) {
      for (WorkLoop loop : loops) {
        Thread t = new Thread(() -> runLoop(loop), "tether-loop-" + loop.name());
        t.setDaemon(true);
        loopThreads.add(t);
        runningLoops++;
      }
      for (Thread t : loopThreads) {
        t.start();
      }
    }
  }

  private void runLoop(WorkLoop loop) {
    boolean started = false;
    try {
      boolean skip;
      synchronized (monitor) {
        skip = shutdownRequested;
      }
      if (skip) {
        log.info("Loop '{}' not started: the group is shutting down", loop.name());
        return;
      }
      log.info("Loop '{}' started", loop.name());
      started = true;
      loop.run();
      log.info("Loop '{}' stopped", loop.name());
    } catch (Throwable t) {
      boolean stopping;
      synchronized (monitor) {
        stopping = shutdownRequested;
      }
      if (stopping && !started && t instanceof IllegalStateException) {
        log.info("Loop '{}' refused to start during shutdown: {}", loop.name(), t.getMessage());
      } else if (stopping) {
        log.warn("Loop '{}' ended with an error during shutdown; a message it held comes back when"
            + " its lease expires: {}", loop.name(), t.toString());
      } else {
        log.error(
            "Loop '{}' failed; the group keeps its other loops running, and readiness now fails"
                + " because this loop is not running",
            loop.name(),
            t);
      }
    } finally {
      Watchdog w = watchdog;
      synchronized (monitor) {
        if (w != null && shutdownRequested) {
          w.retire(loop.name()); // it no longer beats; a long drain must not look like a stall
        }
        runningLoops--;
        monitor.notifyAll();
      }
    }
  }

  /** Waits for the loops; returns whether the calling thread was interrupted meanwhile. */
  private boolean awaitLoops() {
    boolean interrupted = false;
    boolean deadlinePassed = false;
    while (true) {
      boolean mustDrain = false;
      boolean mustStop = false;
      synchronized (monitor) {
        while (runningLoops > 0 && !mustDrain && !mustStop) {
          try {
            if (shutdownRequested) {
              long now = System.nanoTime();
              if (!stopSignalled && now - drainDeadlineNanos >= 0) {
                stopSignalled = true;
                mustStop = true;
                break;
              }
              long left = shutdownDeadlineNanos - now;
              if (left <= 0) {
                deadlinePassed = true;
                break;
              }
              if (!stopSignalled) {
                left = Math.min(left, drainDeadlineNanos - now);
              }
              TimeUnit.NANOSECONDS.timedWait(monitor, left);
            } else {
              monitor.wait();
            }
          } catch (InterruptedException e) {
            interrupted = true;
            if (!shutdownRequested) {
              log.info("Loop group's run() thread was interrupted; shutting the group down");
              requestShutdownLocked();
              mustDrain = true;
            }
          }
        }
      }
      if (mustDrain) {
        signalAfterRequest(); // outside the monitor: loops' drain() may take locks of their own
      } else if (mustStop) {
        stopLoops(true);
      } else {
        break;
      }
    }
    if (deadlinePassed) {
      handleStragglers();
    }
    return interrupted;
  }

  /**
   * Drains every loop (or, without a drain timeout, asks every loop to stop) and returns at once;
   * the group's {@link #run()} then shuts the loops still running down when the drain timeout
   * ends, and waits for them within the shutdown timeout. Readiness fails from now on. Idempotent;
   * callable from any thread, including a loop's.
   */
  public void shutdown() {
    synchronized (monitor) {
      if (shutdownRequested) {
        return;
      }
      requestShutdownLocked();
    }
    signalAfterRequest();
  }

  /**
   * Ends the drain at once: shuts every loop down now ({@link WorkLoop#shutdown()}: running work is
   * asked to stop and handed back) instead of when the drain timeout ends, as for a second SIGTERM.
   * Starts the shutdown if none was requested; the group's deadline stays {@code shutdownTimeout}
   * from the first request. Non-blocking; idempotent; callable from any thread.
   */
  public void shutdownNow() {
    boolean first;
    synchronized (monitor) {
      first = !shutdownRequested;
      if (first) {
        requestShutdownLocked();
      } else if (stopSignalled) {
        return; // stopping already
      }
      drainDeadlineNanos = System.nanoTime();
      stopSignalled = true;
      monitor.notifyAll();
    }
    log.info("Loop group: stopping now, without waiting for the drain to end");
    stopLoops(!first);
  }

  private void requestShutdownLocked() {
    shutdownRequested = true;
    long now = System.nanoTime();
    shutdownDeadlineNanos = now + shutdownTimeout.toNanos();
    drainDeadlineNanos = now + drainTimeout.toNanos();
    stopSignalled = drainTimeout.isZero();
    if (state == State.NEW) {
      state = State.TERMINATED;
      terminated.countDown();
    }
    monitor.notifyAll();
  }

  /** Drains every loop, or without a drain timeout shuts every loop down at once. */
  private void signalAfterRequest() {
    if (drainTimeout.isZero()) {
      log.info("Loop group shutting down: signalling {} loops; they have {} to stop",
          loops.size(), dev.tether.DurationText.of(shutdownTimeout));
      stopLoops(false);
    } else {
      log.info("Loop group draining: {} loops take no new work; running work has {} to finish,"
          + " then it is stopped and handed back; {} in all to stop", loops.size(),
          dev.tether.DurationText.of(drainTimeout), dev.tether.DurationText.of(shutdownTimeout));
      for (WorkLoop loop : loops) {
        try {
          loop.drain();
        } catch (Throwable t) {
          log.error(
              "Loop '{}' threw from drain(); the other loops are still signalled", loop.name(), t);
        }
      }
    }
  }

  /** Shuts down every loop, or only those still running (at the drain's end). */
  private void stopLoops(boolean onlyRunning) {
    List<WorkLoop> running = new ArrayList<>();
    for (WorkLoop loop : loops) {
      if (!onlyRunning || loop.isRunning()) {
        running.add(loop);
      }
    }
    if (onlyRunning && !running.isEmpty()) {
      log.info("Loop group: the drain is over; stopping {} loops still running: {}", running.size(),
          running.stream().map(WorkLoop::name).collect(Collectors.toList()));
    }
    for (WorkLoop loop : running) {
      try {
        loop.shutdown();
      } catch (Throwable t) {
        log.error(
            "Loop '{}' threw from shutdown(); the other loops are still signalled", loop.name(), t);
      }
    }
  }

  /**
   * Requests the shutdown as {@link #shutdown()} (a drain first, when a drain timeout is set), then
   * waits for the group to end within {@code timeout}. Loops still running then are logged by name
   * and their threads interrupted.
   *
   * @param timeout the longest wait, shared by all loops
   * @return true if the group ended within the timeout
   * @throws IllegalArgumentException if the timeout is negative
   */
  public boolean shutdown(Duration timeout) {
    Objects.requireNonNull(timeout, "timeout");
    if (timeout.isNegative()) {
      throw new IllegalArgumentException("timeout must be >= 0, was " + timeout);
    }
    shutdown();
    boolean done = awaitTermination(timeout);
    if (!done) {
      handleStragglers();
    }
    return done;
  }

  /**
   * Waits until {@link #run()} has returned (or the group was shut down before running). Restores
   * the interrupt flag and returns false if interrupted.
   *
   * @param timeout the longest wait
   * @return true if the group has ended
   */
  public boolean awaitTermination(Duration timeout) {
    Objects.requireNonNull(timeout, "timeout");
    try {
      return terminated.await(Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * Logs and interrupts the loop threads still alive, once; a concurrent second caller waits until
   * the first has finished, so that a shutdown hook cannot let the JVM exit mid-report.
   */
  private void handleStragglers() {
    synchronized (stragglerLock) {
      if (stragglersHandled) {
        return;
      }
      List<Thread> alive = new ArrayList<>();
      List<String> names = new ArrayList<>();
      synchronized (monitor) {
        for (int i = 0; i < loopThreads.size(); i++) { // one thread per loop, in the loops' order
          if (loopThreads.get(i).isAlive()) {
            alive.add(loopThreads.get(i));
            names.add(loops.get(i).name());
          }
        }
      }
      if (alive.isEmpty()) {
        return;
      }
      stragglersHandled = true;
      interruptedAtDeadline = List.copyOf(names);
      for (Thread t : alive) {
        StringBuilder stack = new StringBuilder();
        for (StackTraceElement f : t.getStackTrace()) {
          stack.append("\n\tat ").append(f);
        }
        log.error(
            "Loop thread '{}' did not stop within the shutdown timeout of {}; interrupting it and"
                + " giving up on it. Its stack:{}",
            t.getName(),
            shutdownTimeout,
            stack);
        t.interrupt();
      }
      // An interrupted handler's loop hands its message back (not charged, with its checkpoint):
      // let it, before run() returns and its caller closes the store, or the JVM exits
      long until = System.nanoTime() + STRAGGLER_GRACE.toNanos();
      for (Thread t : alive) {
        long left = until - System.nanoTime();
        if (left > 0) {
          try {
            TimeUnit.NANOSECONDS.timedJoin(t, left);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            break;
          }
        }
      }
      for (Thread t : alive) {
        if (t.isAlive()) {
          log.error("Loop thread '{}' still runs {} after its interrupt; its message comes back"
              + " when its lease expires", t.getName(), STRAGGLER_GRACE);
        }
      }
    }
  }

  /**
   * Returns whether the group should receive work: every loop is running and {@link
   * WorkLoop#isReady() ready} (for a {@link MainLoop}: its mailbox works), no shutdown was
   * requested, and every heartbeat is younger than the readiness threshold (by default {@link
   * #DEFAULT_READINESS_FRACTION} of the watchdog's stall threshold; none without a watchdog). This
   * is the health server's readiness check.
   *
   * @return true when ready
   */
  public boolean isReady() {
    synchronized (monitor) {
      if (shutdownRequested || state != State.RUNNING) {
        return false;
      }
    }
    for (WorkLoop loop : loops) {
      if (!loop.isRunning() || !loop.isReady()) {
        return false;
      }
    }
    if (readinessThreshold != null) {
      long threshold = readinessThreshold.toNanos();
      for (WorkLoop loop : loops) {
        if (loop.heartbeat().elapsedNanos() >= threshold) {
          return false;
        }
      }
    }
    return true;
  }

  /**
   * Returns the health server's bound address while it runs (useful with port 0).
   *
   * @return the address, or empty if no health server is configured or running
   */
  public Optional<InetSocketAddress> healthAddress() {
    HealthServer s = healthServer;
    if (s == null || !s.isRunning()) {
      return Optional.empty();
    }
    try {
      return Optional.of(s.address());
    } catch (IllegalStateException e) {
      return Optional.empty(); // stopped meanwhile
    }
  }

  /**
   * Returns the names of the loops that were still running at the shutdown deadline, whose
   * threads were interrupted then (whether or not they ended during the grace that followed).
   *
   * @return the names, empty when every loop stopped in time (or before a shutdown)
   */
  public List<String> interruptedAtDeadline() {
    return interruptedAtDeadline;
  }

  /**
   * Returns the loops, in the order given to the builder.
   *
   * @return the loops
   */
  public List<WorkLoop> loops() {
    return loops;
  }

  private void installShutdownHook() {
    Thread hook =
        new Thread(
            () -> {
              log.info("JVM is shutting down (signal or exit); stopping the loop group");
              if (!shutdown(shutdownTimeout)) {
                log.error(
                    "Loop group did not stop within {}; the JVM exits anyway", shutdownTimeout);
              }
              // The JVM halts once the hooks return: give the code after run() (closing the
              // store, say) a moment to finish on the thread that called it
              awaitRunCaller();
            },
            "tether-shutdown-hook");
    try {
      Runtime.getRuntime().addShutdownHook(hook);
      shutdownHook = hook;
    } catch (IllegalStateException e) {
      log.warn("JVM is already shutting down; no shutdown hook installed", e);
    }
  }

  /**
   * In the shutdown hook: waits up to {@link #STRAGGLER_GRACE} for the thread that called {@link
   * #run()} to end, and not at all once it waits for the hooks itself ({@code System.exit}).
   */
  private void awaitRunCaller() {
    Thread caller = runCaller;
    if (caller == null || caller == Thread.currentThread()) {
      return;
    }
    long until = System.nanoTime() + STRAGGLER_GRACE.toNanos();
    while (caller.isAlive() && !exiting(caller)) {
      if (System.nanoTime() - until >= 0) {
        log.info("Thread '{}', which ran the loop group, still runs {} after the group stopped; the"
            + " JVM exits now", caller.getName(), STRAGGLER_GRACE);
        return;
      }
      try {
        caller.join(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** Whether {@code t} is in {@code System.exit} (so it waits for the shutdown hooks). */
  private static boolean exiting(Thread t) {
    for (StackTraceElement f : t.getStackTrace()) {
      if (f.getClassName().equals("java.lang.Shutdown")
          || (f.getClassName().equals("java.lang.Runtime") && f.getMethodName().equals("exit"))) {
        return true;
      }
    }
    return false;
  }

  private void removeShutdownHook() {
    Thread hook = shutdownHook;
    if (hook == null || hook == Thread.currentThread()) {
      return;
    }
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException e) {
      // the JVM is shutting down and the hook is running or ran: nothing to remove
    }
    shutdownHook = null;
  }

  private String describe() {
    return "loops="
        + loops.stream().map(WorkLoop::name).collect(Collectors.toList())
        + ", drainTimeout="
        + dev.tether.DurationText.of(drainTimeout)
        + ", shutdownTimeout="
        + dev.tether.DurationText.of(shutdownTimeout)
        + ", health="
        + (healthPort == null
            ? "off"
            : healthHost + ":" + healthPort + (healthRoutes.isEmpty() ? "" : " routes " + healthRoutes.keySet()))
        + ", watchdog="
        + (watchdogThreshold == null
            ? "off"
            : "threshold " + dev.tether.DurationText.of(watchdogThreshold) + ", interval " + dev.tether.DurationText.of(watchdogInterval))
        + ", handleSignals="
        + handleSignals
        + ", calibration="
        + calibrationMode;
  }

  @Override
  public String toString() {
    return "LoopGroup[" + describe() + "]";
  }

  /** Builds a {@link LoopGroup}. Each setter validates its value at once. Not thread-safe. */
  public static final class Builder {
    private final List<WorkLoop> loops = new ArrayList<>();
    private Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;
    private Duration drainTimeout = Duration.ZERO;
    private Integer healthPort;
    private String healthHost = HealthServer.DEFAULT_HOST;
    private final Map<String, HttpHandler> healthRoutes = new LinkedHashMap<>();
    private Duration watchdogThreshold = DEFAULT_WATCHDOG_THRESHOLD;
    private Duration readinessThreshold; // null: derived from the watchdog threshold
    private Duration watchdogInterval = DEFAULT_WATCHDOG_INTERVAL;
    private Ticker ticker; // null: the loops' heartbeats' ticker
    private Watchdog.Terminator terminator = Watchdog.Terminator.kill();
    private boolean handleSignals = true;
    private Calibration.Mode calibrationMode = Calibration.Mode.ERROR;

    private Builder() {}

    /**
     * Adds a loop.
     *
     * @param loop the loop; its name must be unique in the group
     * @return this builder
     * @throws IllegalArgumentException if a loop with that name, or that loop, was already added
     */
    public Builder loop(WorkLoop loop) {
      Objects.requireNonNull(loop, "loop");
      String name = Objects.requireNonNull(loop.name(), "loop.name()");
      if (name.isBlank()) {
        throw new IllegalArgumentException("loop name must not be blank: " + loop);
      }
      for (WorkLoop l : loops) {
        if (l == loop || l.name().equals(name)) {
          throw new IllegalArgumentException(
              "loop name '" + name + "' is already in the group; loop names must be unique");
        }
      }
      loops.add(loop);
      return this;
    }

    /**
     * Adds loops, in order.
     *
     * @param list the loops
     * @return this builder
     * @throws IllegalArgumentException as {@link #loop(WorkLoop)}
     */
    public Builder loops(List<? extends WorkLoop> list) {
      Objects.requireNonNull(list, "list").forEach(this::loop);
      return this;
    }

    /**
     * Sets how long the loops have, together, to stop after a shutdown request, drain included.
     *
     * @param timeout positive, and longer than the drain timeout
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder shutdownTimeout(Duration timeout) {
      this.shutdownTimeout = positive("shutdownTimeout", timeout);
      return this;
    }

    /**
     * Sets how long running work may go on after a shutdown request (default zero: it is asked to
     * stop at once): the loops take no new work, their handlers keep beating and extending their
     * leases, and what still runs when this ends is asked to stop and handed back, within what is
     * left of {@link #shutdownTimeout(Duration)}. One instant for the whole group, however many
     * loops it has.
     *
     * @param timeout zero or positive; less than the shutdown timeout
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder drainTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "drainTimeout");
      if (timeout.isNegative()) {
        throw new IllegalArgumentException("drainTimeout must be >= 0, was " + timeout);
      }
      this.drainTimeout = timeout;
      return this;
    }

    /**
     * Serves health probes on this port (default: no health server).
     *
     * @param port 0 (any free port, see {@link LoopGroup#healthAddress()}) to 65535
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder healthPort(int port) {
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("healthPort must be 0..65535, was " + port);
      }
      this.healthPort = port;
      return this;
    }

    /**
     * Serves no health probes (the default).
     *
     * @return this builder
     */
    public Builder noHealthServer() {
      this.healthPort = null;
      return this;
    }

    /**
     * Sets the health server's host (default {@value HealthServer#DEFAULT_HOST}, reachable by the
     * kubelet).
     *
     * @param host a host name or IP address
     * @return this builder
     * @throws IllegalArgumentException if blank
     */
    public Builder healthHost(String host) {
      Objects.requireNonNull(host, "host");
      if (host.isBlank()) {
        throw new IllegalArgumentException("healthHost must not be blank");
      }
      this.healthHost = host;
      return this;
    }

    /**
     * Mounts an extra handler on the health server (see {@link HealthServer.Builder#route(String,
     * HttpHandler)}); ignored without {@link #healthPort(int)}.
     *
     * @param path the path
     * @param handler the handler
     * @return this builder
     * @throws IllegalArgumentException if the path is invalid, reserved or already mounted
     */
    public Builder healthRoute(String path, HttpHandler handler) {
      HealthServer.builder().route(path, handler); // validates path and handler
      if (healthRoutes.containsKey(path)) {
        throw new IllegalArgumentException("route path '" + path + "' is already mounted");
      }
      healthRoutes.put(path, handler);
      return this;
    }

    /**
     * Enables the watchdog with this stall threshold (default {@link
     * #DEFAULT_WATCHDOG_THRESHOLD}).
     *
     * @param threshold positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder watchdogThreshold(Duration threshold) {
      this.watchdogThreshold = positive("watchdogThreshold", threshold);
      return this;
    }

    /**
     * Sets how old a heartbeat may be before readiness fails (default: {@link
     * #DEFAULT_READINESS_FRACTION} of the watchdog threshold, or none without a watchdog).
     *
     * @param threshold positive; with a watchdog, at most its stall threshold
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder readinessThreshold(Duration threshold) {
      this.readinessThreshold = positive("readinessThreshold", threshold);
      return this;
    }

    Duration effectiveReadinessThreshold() {
      if (readinessThreshold != null) {
        return readinessThreshold;
      }
      if (watchdogThreshold == null) {
        return null;
      }
      return Duration.ofNanos((long) (watchdogThreshold.toNanos() * DEFAULT_READINESS_FRACTION));
    }

    /**
     * Disables the watchdog: stalled loops are not detected, and (unless {@link
     * #readinessThreshold(Duration)} is set) readiness ignores heartbeats.
     *
     * @return this builder
     */
    public Builder noWatchdog() {
      this.watchdogThreshold = null;
      return this;
    }

    /**
     * Sets the watchdog's longest time between checks (default {@link
     * #DEFAULT_WATCHDOG_INTERVAL}).
     *
     * @param interval positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder watchdogInterval(Duration interval) {
      this.watchdogInterval = positive("watchdogInterval", interval);
      return this;
    }

    /**
     * Sets the ticker that every loop's heartbeat reads (default: the first loop's heartbeat's).
     *
     * @param ticker the ticker
     * @return this builder
     */
    public Builder ticker(Ticker ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /**
     * Sets what the watchdog calls to end the process (default {@link
     * Watchdog.Terminator#kill()}); tests pass one that records the call.
     *
     * @param terminator the terminator
     * @return this builder
     */
    public Builder terminator(Watchdog.Terminator terminator) {
      this.terminator = Objects.requireNonNull(terminator, "terminator");
      return this;
    }

    /**
     * Sets whether {@link LoopGroup#run()} installs a JVM shutdown hook that shuts the group down
     * on SIGTERM or SIGINT (default true).
     *
     * @param handle whether to install the hook
     * @return this builder
     */
    public Builder handleSignals(boolean handle) {
      this.handleSignals = handle;
      return this;
    }

    /**
     * Sets what {@link #build()} does with violated {@link Calibration} rules (default {@link
     * Calibration.Mode#ERROR}).
     *
     * @param mode the mode
     * @return this builder
     */
    public Builder calibration(Calibration.Mode mode) {
      this.calibrationMode = Objects.requireNonNull(mode, "mode");
      return this;
    }

    /**
     * Checks the configuration and builds the group (not started).
     *
     * @return the group
     * @throws IllegalArgumentException if there is no loop; if the drain timeout is not less than
     *     the shutdown timeout; if, with a watchdog, a heartbeat reads
     *     another ticker than the group's; or, in {@link Calibration.Mode#ERROR}, listing every
     *     violated calibration rule
     */
    public LoopGroup build() {
      if (loops.isEmpty()) {
        throw new IllegalArgumentException("a LoopGroup needs at least one loop; add one with loop()");
      }
      if (drainTimeout.compareTo(shutdownTimeout) >= 0) {
        throw new IllegalArgumentException("drainTimeout (" + drainTimeout + ") must be less than"
            + " shutdownTimeout (" + shutdownTimeout + "): after the drain, running work needs"
            + " time to stop and be handed back; raise shutdownTimeout");
      }
      Set<Heartbeat> seen = new HashSet<>();
      for (WorkLoop l : loops) {
        Heartbeat hb = Objects.requireNonNull(l.heartbeat(), "heartbeat() of loop " + l.name());
        if (!seen.add(hb)) {
          throw new IllegalArgumentException(
              "loop '" + l.name() + "' shares its heartbeat with another loop; each needs its own");
        }
      }
      Ticker effective = ticker != null ? ticker : loops.get(0).heartbeat().ticker();
      if (watchdogThreshold != null) {
        for (WorkLoop l : loops) {
          if (l.heartbeat().ticker() != effective) {
            throw new IllegalArgumentException(
                "loop '"
                    + l.name()
                    + "' beats a heartbeat on ticker "
                    + l.heartbeat().ticker()
                    + " but the group's watchdog reads "
                    + effective
                    + "; all heartbeats of a group must share one ticker");
          }
        }
      }
      if (readinessThreshold != null
          && watchdogThreshold != null
          && readinessThreshold.compareTo(watchdogThreshold) > 0) {
        throw new IllegalArgumentException(
            "readinessThreshold ("
                + readinessThreshold
                + ") must be <= watchdogThreshold ("
                + watchdogThreshold
                + "): readiness has to fail before the watchdog ends the process");
      }
      if (calibrationMode != Calibration.Mode.OFF) {
        Calibration.Report report =
            Calibration.report(loops, Optional.ofNullable(watchdogThreshold), watchdogInterval);
        List<Calibration.Violation> violations = report.violations();
        String unchecked = report.unchecked().isEmpty() ? ""
            : "\nNot checked:\n" + report.unchecked().stream().map(u -> "  - " + u)
                .collect(Collectors.joining("\n"));
        if (!violations.isEmpty()) {
          String list =
              violations.stream().map(v -> "  - " + v).collect(Collectors.joining("\n"));
          if (calibrationMode == Calibration.Mode.ERROR) {
            throw new IllegalArgumentException(
                "LoopGroup timeouts are not calibrated ("
                    + violations.size()
                    + " violated rule"
                    + (violations.size() == 1 ? "" : "s")
                    + "):\n"
                    + list
                    + unchecked
                    + "\nFix the values, or build with calibration(Calibration.Mode.WARN) to"
                    + " only log them.");
          }
          log.warn("LoopGroup timeouts are not calibrated:\n{}{}", list, unchecked);
        } else if (!unchecked.isEmpty()) {
          // debug: a loop without a deadline is the usual case for long jobs that beat while
          // they work, and the rules left unchecked then are advice, not a fault
          log.debug("LoopGroup timeouts calibrated as far as they could be checked.{}", unchecked);
        }
      }
      return new LoopGroup(this, effective);
    }

    private static Duration positive(String what, Duration d) {
      Objects.requireNonNull(d, what);
      if (d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(what + " must be > 0, was " + d);
      }
      return d;
    }
  }
}
