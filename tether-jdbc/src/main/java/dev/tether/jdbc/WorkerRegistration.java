package dev.tether.jdbc;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps one process's row in {@link WorkerRegistry} fresh: registers it on {@link #start}, then on
 * one thread of its own ({@code tether-worker-registry}, a daemon, started only by {@code start})
 * refreshes it every interval with the count of items in flight, re-registers it when another
 * process deleted it, and every {@value #PRUNE_EVERY} refreshes deletes rows silent for {@value
 * WorkerRegistry#DELETE_AFTER_REFRESHES} intervals. {@link #close} stops the thread and deletes the
 * row. A refresh that fails (the store is down) is logged once at WARN until one succeeds.
 *
 * <pre>{@code
 * try (WorkerRegistration reg = WorkerRegistration.start(new WorkerRegistry(store),
 *     WorkerInfo.Registration.ofThisProcess("billing-1", "1.0", List.of("invoices"), 4, 4),
 *     Duration.ofSeconds(10), inFlight::get)) {
 *   group.start(); ...
 * }
 * }</pre>
 */
public final class WorkerRegistration implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(WorkerRegistration.class);

  /** Refreshes between two prunes: {@value}. */
  static final int PRUNE_EVERY = 6;

  /** The refresh interval the CLI worker uses: 10 s. */
  public static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(10);

  private final WorkerRegistry registry;
  private final WorkerInfo.Registration registration;
  private final Duration interval;
  private final IntSupplier inFlight;
  private final ScheduledExecutorService thread;
  private int refreshes;
  private boolean failing;

  private WorkerRegistration(WorkerRegistry registry, WorkerInfo.Registration registration, Duration interval,
      IntSupplier inFlight) {
    this.registry = registry;
    this.registration = registration;
    this.interval = interval;
    this.inFlight = inFlight;
    this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "tether-worker-registry");
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * Registers the process now (a failure is thrown) and starts refreshing it.
   *
   * @param registry the registry
   * @param registration what the process says of itself
   * @param interval the refresh interval, positive
   * @param inFlight how many items the process runs now
   * @return the running registration; close it on shutdown
   */
  public static WorkerRegistration start(WorkerRegistry registry, WorkerInfo.Registration registration,
      Duration interval, IntSupplier inFlight) {
    Objects.requireNonNull(registry, "registry");
    Objects.requireNonNull(inFlight, "inFlight");
    registry.register(registration, interval);
    WorkerRegistration r = new WorkerRegistration(registry, registration, interval, inFlight);
    long ms = interval.toMillis();
    r.thread.scheduleWithFixedDelay(r::refreshOnce, ms, ms, TimeUnit.MILLISECONDS);
    return r;
  }

  /** One refresh (the thread's work; tests call it directly). */
  void refreshOnce() {
    try {
      if (!registry.refresh(registration.workerId(), inFlight.getAsInt())) {
        log.info("Worker {}: its registry row was deleted (silent too long?); registering again",
            registration.workerId());
        registry.register(registration, interval);
      }
      if (++refreshes % PRUNE_EVERY == 0) {
        int n = registry.prune(interval.multipliedBy(WorkerRegistry.DELETE_AFTER_REFRESHES));
        if (n > 0) {
          log.info("Deleted {} worker row(s) silent for {} refresh intervals", n,
              WorkerRegistry.DELETE_AFTER_REFRESHES);
        }
      }
      if (failing) {
        log.info("Worker {}: registry refresh works again", registration.workerId());
        failing = false;
      }
    } catch (RuntimeException e) {
      if (!failing) {
        log.warn("Worker {}: could not refresh its registry row: {}", registration.workerId(), e.toString());
        failing = true;
      } else {
        log.debug("Registry refresh failed again", e);
      }
    }
  }

  /**
   * Stops refreshing and deletes the row, waiting at most {@value #CLOSE_WAIT_MILLIS} ms for the
   * store: a store that does not answer must not hold up a shutdown (the row then ages out;
   * logged, not thrown).
   */
  @Override
  public void close() {
    java.util.concurrent.Future<?> delete;
    try {
      // on the registry's own thread, after any refresh under way, so that none writes the row again
      delete = thread.submit(() -> registry.deregister(registration.workerId()));
    } catch (java.util.concurrent.RejectedExecutionException e) {
      return; // already closed
    }
    thread.shutdown();
    try {
      delete.get(CLOSE_WAIT_MILLIS, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      log.warn("Worker {}: the store did not answer within {} ms to remove its registry row; it ages out",
          registration.workerId(), CLOSE_WAIT_MILLIS);
    } catch (java.util.concurrent.ExecutionException e) {
      log.warn("Worker {}: could not remove its registry row ({}); it ages out", registration.workerId(),
          e.getCause().toString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      thread.shutdownNow();
    }
  }

  /** The longest {@link #close} waits for the store: {@value} ms. */
  static final long CLOSE_WAIT_MILLIS = 1000;
}
