package dev.tether.spring;

import dev.tether.Codec;
import dev.tether.LeaseExtenderConfig;
import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.RecoverySweep;
import dev.tether.jdbc.TetherStore;
import dev.tether.loop.LoopGroup;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.loop.WorkLoop;
import dev.tether.mailbox.Mailbox;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Runs the application's {@link TetherHandler} beans as a {@link LoopGroup}, with the store's
 * {@link RecoverySweep}, for as long as the application context runs.
 *
 * <p>Started with the context (after every singleton exists); stopped in the phase of Spring's
 * graceful shutdown ({@link #PHASE}): the loops stop receiving; for {@code
 * tether.worker.drain-timeout} (default zero) running handlers go on as usual, beating, and may
 * finish; then they are asked to stop ({@link dev.tether.loop.WorkContext#isShutdownRequested()}),
 * and what is still running at {@code tether.worker.shutdown-timeout} is interrupted and handed
 * back, not charged, so another worker resumes it. The store, and the application's {@code
 * DataSource} under it, close only after that: when Spring stops waiting for the phase ({@code
 * spring.lifecycle.timeout-per-shutdown-phase}) before the loops stopped, closing this bean
 * ({@link #close()}, before the store's own) waits for them.
 *
 * <p>The JVM's shutdown hook is Spring's (the group installs none); the watchdog, when on, still
 * ends the process at once when a loop stalls past its threshold. Tether's own health server
 * runs only when {@code tether.health-server.enabled} is true: in a Boot application the
 * Actuator's probes answer instead ({@code /actuator/health/liveness}, {@code .../readiness}).
 *
 * <p>Thread-safe.
 */
public final class TetherWorkers implements SmartLifecycle, AutoCloseable {
  /**
   * The lifecycle phase: Spring's graceful shutdown phase (that of the web server's graceful
   * shutdown), so that the loops drain while the web server finishes its requests.
   */
  public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 1024;

  private static final Logger LOG = LoggerFactory.getLogger(TetherWorkers.class);

  /**
   * The group's settings.
   *
   * @param shutdownTimeout how long the loops have to stop after a shutdown request; what still
   *     runs then is interrupted and handed back
   * @param drainTimeout how long running handlers go on before they are asked to stop (zero: at
   *     once); less than the shutdown timeout
   * @param watchdogThreshold a loop silent this long ends the process; null for no watchdog
   * @param livenessThreshold a loop silent this long fails liveness (the watchdog's threshold,
   *     also when the watchdog is off); null for never
   * @param watchdogInterval how often the watchdog looks
   * @param readinessThreshold a loop silent this long fails readiness; null for the group's
   *     default (a fraction of the watchdog's threshold)
   * @param calibration what a violated timeout rule does
   * @param healthPort the port of Tether's own health server, or null for none
   * @param sweep whether this process runs the recovery sweep
   * @param sweepInterval how often the sweep looks
   */
  public record Settings(
      Duration shutdownTimeout,
      Duration drainTimeout,
      Duration watchdogThreshold,
      Duration livenessThreshold,
      Duration watchdogInterval,
      Duration readinessThreshold,
      dev.tether.loop.Calibration.Mode calibration,
      Integer healthPort,
      boolean sweep,
      Duration sweepInterval) {
    /**
     * The settings as before the drain and liveness thresholds were their own: no drain, and
     * liveness at the watchdog's threshold (never failing without a watchdog).
     *
     * @param shutdownTimeout how long the loops have to stop after a shutdown request
     * @param watchdogThreshold a loop silent this long ends the process; null for no watchdog
     * @param watchdogInterval how often the watchdog looks
     * @param readinessThreshold a loop silent this long fails readiness; null for the group's
     *     default
     * @param calibration what a violated timeout rule does
     * @param healthPort the port of Tether's own health server, or null for none
     * @param sweep whether this process runs the recovery sweep
     * @param sweepInterval how often the sweep looks
     */
    public Settings(Duration shutdownTimeout, Duration watchdogThreshold, Duration watchdogInterval,
        Duration readinessThreshold, dev.tether.loop.Calibration.Mode calibration, Integer healthPort,
        boolean sweep, Duration sweepInterval) {
      this(shutdownTimeout, Duration.ZERO, watchdogThreshold, watchdogThreshold, watchdogInterval,
          readinessThreshold, calibration, healthPort, sweep, sweepInterval);
    }
  }

  /**
   * One handler's resolved settings: what {@link TetherHandler} gave, defaults filled in.
   *
   * @param handler the handler
   * @param queue the queue
   * @param concurrency loops
   * @param loopConfig each loop's configuration
   * @param maxAttempts the budget of messages sent from this application
   * @param requestCodec codec of requests
   * @param resultCodec codec of results
   */
  public record HandlerSpec(
      TetherHandler<?, ?> handler,
      String queue,
      int concurrency,
      MainLoopConfig loopConfig,
      int maxAttempts,
      Codec<?> requestCodec,
      Codec<?> resultCodec) {}

  private final TetherStore store;
  private final List<HandlerSpec> handlers;
  private final Settings settings;
  private final List<TetherLoopCustomizer> customizers;
  private final String workerId;

  private final Object lock = new Object();
  private LoopGroup group; // guarded by lock
  private final RecoverySweep sweep; // null: this process does not sweep
  private Thread runner; // guarded by lock
  private Thread stopper; // guarded by lock: the last stop's, until close() waited for it
  private final List<JdbcMailbox<?, ?>> mailboxes = new ArrayList<>(); // guarded by lock
  private volatile boolean running;

  /**
   * Creates the workers; nothing runs before {@link #start()}.
   *
   * @param store the store
   * @param handlers the handlers with their settings
   * @param settings the group's settings
   * @param customizers applied to each loop's builder, in order
   */
  public TetherWorkers(TetherStore store, List<HandlerSpec> handlers, Settings settings,
      List<TetherLoopCustomizer> customizers) {
    this.store = Objects.requireNonNull(store, "store");
    this.handlers = List.copyOf(handlers);
    this.settings = Objects.requireNonNull(settings, "settings");
    this.customizers = List.copyOf(customizers);
    this.workerId = ManagementFactory.getRuntimeMXBean().getName(); // pid@host
    this.sweep = settings.sweep() ? new RecoverySweep(store,
        dev.tether.jdbc.RecoverySweepConfig.builder().scanInterval(settings.sweepInterval()).build()) : null;
  }

  /**
   * Returns the recovery sweep this process runs while started (for its metrics).
   *
   * @return the sweep, or empty when {@code tether.sweep.enabled} is false
   */
  public java.util.Optional<RecoverySweep> sweep() {
    return java.util.Optional.ofNullable(sweep);
  }

  @Override
  public void start() {
    awaitStopped(); // a restart waits for the previous run's drain (its loops, its sweep)
    synchronized (lock) {
      if (running) {
        return;
      }
      try {
        startLocked();
      } catch (RuntimeException | Error e) {
        // nothing of this start runs on: its mailboxes closed, the sweep stopped
        mailboxes.forEach(JdbcMailbox::close);
        mailboxes.clear();
        if (sweep != null) {
          sweep.stop();
        }
        throw e;
      }
    }
  }

  private void startLocked() {
    List<WorkLoop> loops = new ArrayList<>();
    for (HandlerSpec spec : handlers) {
      for (int i = 1; i <= spec.concurrency(); i++) {
        loops.add(loop(spec, i));
      }
    }
    LoopGroup g = null;
    if (!loops.isEmpty()) {
      // built before anything starts: a refused setting leaves nothing running
      LoopGroup.Builder b = LoopGroup.builder().loops(loops).handleSignals(false)
          .shutdownTimeout(settings.shutdownTimeout()).drainTimeout(settings.drainTimeout())
          .calibration(settings.calibration());
      if (settings.watchdogThreshold() == null) {
        b.noWatchdog();
      } else {
        b.watchdogThreshold(settings.watchdogThreshold()).watchdogInterval(settings.watchdogInterval());
      }
      if (settings.readinessThreshold() != null) {
        b.readinessThreshold(settings.readinessThreshold());
      }
      if (settings.healthPort() != null) {
        b.healthPort(settings.healthPort());
      }
      g = b.build();
    }
    if (sweep != null) {
      sweep.start();
    }
    if (g != null) {
      group = g;
      LoopGroup run = g;
      Thread t = new Thread(() -> {
        try {
          run.run();
        } catch (RuntimeException e) {
          LOG.error("Tether loop group failed to run; its loops are not working (readiness is DOWN)", e);
        }
      }, "tether-loop-group");
      t.setDaemon(true);
      runner = t;
      t.start();
    }
    running = true;
    LOG.info("Tether workers started: {} loops on {} for queues {}", loops.size(), store,
        handlers.stream().map(HandlerSpec::queue).toList());
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private WorkLoop loop(HandlerSpec spec, int n) {
    JdbcMailbox<Object, Object> mailbox = JdbcMailbox.builder(store, spec.queue(),
            (Codec<Object>) spec.requestCodec(), (Codec<Object>) spec.resultCodec())
        .maxAttempts(spec.maxAttempts())
        .holder(workerId + "/" + spec.queue() + "/" + n)
        .build();
    mailboxes.add(mailbox);
    MainLoop.Builder<Object, Object> b = MainLoop.builder(spec.queue() + "-" + n, (Mailbox) mailbox,
        (dev.tether.loop.Handler) spec.handler()).config(spec.loopConfig());
    for (TetherLoopCustomizer c : customizers) {
      c.customize(spec.queue(), b);
    }
    MainLoop<Object, Object> loop = b.build();
    for (TetherLoopCustomizer c : customizers) {
      c.built(spec.queue(), loop);
    }
    return loop;
  }

  /**
   * Stops as {@link #stop(Runnable)} does and returns once stopped (loops, sweep), or at the
   * latest as {@link #close()} does.
   */
  @Override
  public void stop() {
    stop(() -> {});
    awaitStopped();
  }

  /**
   * Asks every loop to stop, lets running handlers go on for the drain timeout and then asks them
   * to stop, hands back what is still running at the shutdown timeout, stops the sweep, then
   * calls {@code callback}, on a thread of its own so that other lifecycles stop meanwhile.
   * {@link #close()} waits for that thread.
   */
  @Override
  public void stop(Runnable callback) {
    synchronized (lock) {
      Runnable drain = stopping();
      if (drain != null) {
        Thread t = new Thread(() -> {
          try {
            drain.run();
          } finally {
            callback.run();
          }
        }, "tether-drain");
        t.setDaemon(true);
        stopper = t; // published with running = false: a close() from now on waits for it
        t.start();
        return;
      }
    }
    callback.run();
  }

  /**
   * Waits until the workers have stopped, stopping them first if they still run: Spring calls
   * this when it destroys the bean, before it closes the store the workers depend on, so that
   * work still running when Spring stopped waiting for the shutdown phase is handed back while
   * the store is open. Returns at the latest twice the shutdown timeout and 10 s after the stop
   * began (the stop's own bounds end it before that). Idempotent.
   */
  @Override
  public void close() {
    stop();
  }

  /** Waits for the last stop's drain, bounded as {@link #close()} says. */
  private void awaitStopped() {
    Thread t;
    synchronized (lock) {
      t = stopper;
    }
    if (t == null || t == Thread.currentThread()) {
      return;
    }
    Duration bound = settings.shutdownTimeout().multipliedBy(2).plusSeconds(10);
    try {
      t.join(bound.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (t.isAlive()) {
      LOG.warn("Tether workers: still stopping after {}; going on anyway", bound);
    } else {
      synchronized (lock) {
        if (stopper == t) {
          stopper = null;
        }
      }
    }
  }

  /** Marks the workers stopped and returns what stops them, or null if they were not running. */
  private Runnable stopping() {
    LoopGroup g;
    Thread t;
    RecoverySweep s;
    List<JdbcMailbox<?, ?>> ms;
    synchronized (lock) {
      if (!running) {
        return null;
      }
      running = false;
      g = group;
      t = runner;
      s = sweep;
      group = null;
      runner = null;
      // this run's mailboxes: a start after this stop builds its own
      ms = new ArrayList<>(mailboxes);
      mailboxes.clear();
    }
    return () -> {
      if (g != null) {
        // Handlers still running at the timeout are interrupted, and the group gives them a
        // moment to hand their messages back before this returns, while the store is open
        g.shutdown(settings.shutdownTimeout());
        if (g.loops().stream().anyMatch(WorkLoop::isRunning)) {
          LOG.warn("Tether loops did not all stop within {} (and the moment after an interrupt);"
              + " their messages go back to the queue when their leases run out",
              settings.shutdownTimeout());
        }
        if (t != null) {
          try {
            t.join(settings.shutdownTimeout().toMillis() + 1000);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }
      if (s != null) {
        s.stop();
      }
      ms.forEach(JdbcMailbox::close);
      LOG.info("Tether workers stopped");
    };
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  @Override
  public int getPhase() {
    return PHASE;
  }

  /**
   * Returns whether the loops should be given work: every loop runs, is ready (its mailbox works)
   * and beat recently; true when there are no loops.
   *
   * @return readiness of the loops
   */
  public boolean loopsReady() {
    LoopGroup g;
    synchronized (lock) {
      if (!running) {
        return false;
      }
      g = group;
    }
    return g == null || g.isReady();
  }

  /**
   * Returns each running loop's name and the time since its last beat.
   *
   * @return by loop name, in order
   */
  public java.util.Map<String, Duration> heartbeatAges() {
    LoopGroup g;
    synchronized (lock) {
      g = group;
    }
    java.util.Map<String, Duration> out = new java.util.LinkedHashMap<>();
    if (g != null) {
      for (WorkLoop l : g.loops()) {
        out.put(l.name(), l.heartbeat().elapsed());
      }
    }
    return out;
  }

  /**
   * Returns the loops (empty before start and after stop).
   *
   * @return the loops
   */
  public List<WorkLoop> loops() {
    synchronized (lock) {
      return group == null ? List.of() : group.loops();
    }
  }

  /**
   * Returns the handlers with their resolved settings.
   *
   * @return the handlers
   */
  public List<HandlerSpec> handlers() {
    return handlers;
  }

  /**
   * Returns the group's settings.
   *
   * @return the settings
   */
  public Settings settings() {
    return settings;
  }

  /**
   * Returns the store.
   *
   * @return the store
   */
  public TetherStore store() {
    return store;
  }

  /**
   * Builds a loop configuration from a handler's resolved settings.
   *
   * @param visibility the visibility timeout
   * @param extender the lease extender's settings
   * @param deadline the handler's deadline, or null
   * @param waitTime the receive's long-poll wait
   * @return the configuration
   */
  public static MainLoopConfig loopConfig(Duration visibility, LeaseExtenderConfig extender, Duration deadline,
      Duration waitTime) {
    MainLoopConfig.Builder b = MainLoopConfig.builder().visibilityTimeout(visibility).leaseExtender(extender)
        .waitTime(waitTime);
    if (deadline != null) {
      b.deadline(deadline);
    }
    return b.build();
  }
}
