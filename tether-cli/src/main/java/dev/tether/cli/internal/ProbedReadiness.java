package dev.tether.cli.internal;

import dev.tether.Ticker;
import dev.tether.jdbc.TetherStore;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

/**
 * Readiness of a process whose only store calls are the ones its dashboard makes ({@code tether
 * serve}): without workers nothing else calls the store, so {@link TetherStore#isAvailable()}
 * would keep its last state. Each readiness request answers at once from the latest probe ({@link
 * TetherStore#probe()}) and, when that probe started {@code interval} or more ago, starts the next
 * one on a background thread; a probe running for {@code timeout} or more counts as failed (a
 * database that does not answer that fast is not ready; the probe itself may block for the pool's
 * connection timeout). So an answer is the result of the probe the previous request started: an
 * outage or a recovery shows one request later. Ready at first: the store was opened (and
 * migrated) just before. Probes happen only when readiness is asked for.
 *
 * <p>Thread-safe; {@link #getAsBoolean()} never blocks on the database. Close it (it stops the
 * probe thread) before the store.
 */
public final class ProbedReadiness implements BooleanSupplier, AutoCloseable {
  private final BooleanSupplier probe;
  private final long intervalNanos;
  private final long timeoutNanos;
  private final Ticker ticker;
  private final ExecutorService executor;
  private final AtomicBoolean running = new AtomicBoolean();
  private volatile boolean lastResult = true;
  private volatile boolean closed;
  private volatile long lastStart;

  /**
   * A readiness check from {@code probe}, run on {@code executor}.
   *
   * @param probe the check of the database; true when it works
   * @param interval the shortest time between the starts of two probes
   * @param timeout how long a probe may run before readiness reports failure
   * @param ticker the clock of intervals and timeouts
   * @param executor where probes run (shut down by {@link #close()})
   */
  public ProbedReadiness(
      BooleanSupplier probe, Duration interval, Duration timeout, Ticker ticker, ExecutorService executor) {
    this.probe = Objects.requireNonNull(probe, "probe");
    this.intervalNanos = positive(interval, "interval").toNanos();
    this.timeoutNanos = positive(timeout, "timeout").toNanos();
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.executor = Objects.requireNonNull(executor, "executor");
    this.lastStart = ticker.read() - intervalNanos; // the first request starts a probe
  }

  /**
   * Probes {@code store} at most once a second, on a daemon thread of its own, and reports it
   * unready while a probe has run for two seconds or more.
   *
   * @param store the store to probe
   * @return the readiness check; close it before the store
   */
  public static ProbedReadiness of(TetherStore store) {
    return new ProbedReadiness(store::probe, Duration.ofSeconds(1), Duration.ofSeconds(2), Ticker.system(),
        Executors.newSingleThreadExecutor(r -> {
          Thread t = new Thread(r, "tether-ready-probe");
          t.setDaemon(true);
          return t;
        }));
  }

  private static Duration positive(Duration d, String what) {
    Objects.requireNonNull(d, what);
    if (d.isZero() || d.isNegative()) {
      throw new IllegalArgumentException(what + " must be positive, was " + d);
    }
    return d;
  }

  /**
   * Answers from the latest probe and starts the next one when it is due. Synchronized: the
   * health server answers on many threads, and this never blocks.
   */
  @Override
  public synchronized boolean getAsBoolean() {
    if (closed) {
      return false;
    }
    long now = ticker.read();
    if (running.get()) {
      return lastResult && now - lastStart < timeoutNanos;
    }
    if (now - lastStart >= intervalNanos) {
      running.set(true);
      lastStart = now;
      try {
        executor.execute(this::runProbe);
      } catch (RejectedExecutionException e) { // closed
        running.set(false);
        return false;
      }
    }
    return lastResult;
  }

  private void runProbe() {
    boolean ok = false;
    try {
      ok = probe.getAsBoolean();
    } catch (RuntimeException e) {
      // counts as failed: e.g. the store closed under it
    } finally {
      if (!closed) {
        lastResult = ok;
      }
      running.set(false);
    }
  }

  /** Stops probing; a probe in flight is interrupted and readiness reports failure from now on. */
  @Override
  public void close() {
    closed = true;
    executor.shutdownNow();
    try {
      executor.awaitTermination(1, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
