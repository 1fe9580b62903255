package dev.tether.health;

import java.time.Duration;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor the JDK HTTP server runs its exchanges on, built so that slow or malformed clients
 * cannot starve health probes.
 *
 * <h2>Why this exists</h2>
 *
 * The JDK server's single dispatcher thread accepts connections and waits (non-blocking) for the
 * first byte; it then hands the connection to the executor, and the executor's thread reads the
 * request line and headers in <em>blocking</em> mode, then runs the handler. A client that sends
 * half a request line therefore holds an executor thread for as long as it likes: the server's
 * own limit ({@code sun.net.httpserver.maxReqTime}) is off by default, counted in whole seconds
 * and read once per JVM from a system property. Instead of mutating global properties, this
 * executor bounds the reading phase itself:
 *
 * <ul>
 *   <li>each exchange gets a thread at once, up to {@code maxThreads} (no queue, so a probe never
 *       waits behind slow clients); beyond that the exchange is rejected and the JDK server closes
 *       the connection;
 *   <li>an exchange still reading its request {@code readTimeout} after it started has its thread
 *       interrupted: the socket channel is interruptible, so the blocked read fails, the JDK server
 *       closes that connection, and the thread is free again. Once a handler is entered ({@link
 *       #enterHandler()}), the exchange is never interrupted.
 * </ul>
 *
 * Threads are daemons named {@code tether-health-N}; two stay alive, the others end after 30 s
 * idle. Thread-safe.
 */
final class RequestExecutor implements Executor {
  private static final Logger log = LoggerFactory.getLogger(RequestExecutor.class);
  private static final int CORE_THREADS = 2;

  private final ThreadPoolExecutor pool;
  private final ScheduledThreadPoolExecutor timer;
  private final long readTimeoutNanos;
  private final ThreadLocal<Task> current = new ThreadLocal<>();
  private final AtomicLong rejected = new AtomicLong();
  private final AtomicLong timedOut = new AtomicLong();

  RequestExecutor(int maxThreads, Duration readTimeout) {
    this.readTimeoutNanos = readTimeout.toNanos();
    AtomicInteger counter = new AtomicInteger();
    this.pool =
        new ThreadPoolExecutor(
            Math.min(CORE_THREADS, maxThreads),
            maxThreads,
            30,
            TimeUnit.SECONDS,
            new SynchronousQueue<>(),
            r -> {
              Thread t = new Thread(r, "tether-health-" + counter.incrementAndGet());
              t.setDaemon(true);
              return t;
            },
            new ThreadPoolExecutor.AbortPolicy());
    this.timer =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, "tether-health-timeout");
              t.setDaemon(true);
              return t;
            });
    this.timer.setRemoveOnCancelPolicy(true);
  }

  /**
   * Runs the exchange on a pool thread.
   *
   * @throws RejectedExecutionException if every thread is busy or the executor is shut down; the
   *     JDK server then closes the connection
   */
  @Override
  public void execute(Runnable exchange) {
    try {
      pool.execute(new Task(exchange));
    } catch (RejectedExecutionException e) {
      long n = rejected.incrementAndGet();
      log.debug(
          "Health server busy ({} requests in progress); closing a new connection ({} so far)",
          pool.getActiveCount(),
          n);
      throw e;
    }
  }

  /** Marks the exchange on the calling thread as past reading: it is no longer interrupted. */
  void enterHandler() {
    Task t = current.get();
    if (t != null) {
      t.enterHandler();
    }
  }

  /**
   * Returns how many exchanges were cut off for reading their request too slowly.
   *
   * @return the count since start
   */
  long timedOutCount() {
    return timedOut.get();
  }

  /**
   * Returns how many connections were refused because every thread was busy.
   *
   * @return the count since start
   */
  long rejectedCount() {
    return rejected.get();
  }

  /**
   * Returns how many exchanges are being read or handled now.
   *
   * @return the approximate count
   */
  int activeCount() {
    return pool.getActiveCount();
  }

  /** Interrupts every thread and waits briefly (at most one second) for them to end. */
  void shutdown() {
    timer.shutdownNow();
    pool.shutdownNow();
    try {
      pool.awaitTermination(1, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private enum Phase {
    READING,
    HANDLING,
    TIMED_OUT,
    DONE
  }

  private final class Task implements Runnable {
    private final Runnable exchange;
    private Phase phase = Phase.READING; // guarded by this
    private Thread thread; // guarded by this

    Task(Runnable exchange) {
      this.exchange = exchange;
    }

    @Override
    public void run() {
      synchronized (this) {
        thread = Thread.currentThread();
      }
      current.set(this);
      ScheduledFuture<?> timeout = null;
      try {
        timeout = timer.schedule(this::onTimeout, readTimeoutNanos, TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        // shutting down: the server is closing every connection anyway
      }
      try {
        exchange.run();
      } catch (Throwable t) {
        log.warn("Health server exchange failed", t);
      } finally {
        synchronized (this) {
          phase = Phase.DONE;
        }
        if (timeout != null) {
          timeout.cancel(false);
        }
        current.remove();
        // An interrupt for this exchange (delivered inside the lock above, so already set) must
        // not leak into the next exchange run by this pool thread.
        Thread.interrupted();
      }
    }

    synchronized void enterHandler() {
      if (phase == Phase.READING) {
        phase = Phase.HANDLING;
      }
    }

    synchronized void onTimeout() {
      if (phase == Phase.READING) {
        phase = Phase.TIMED_OUT;
        timedOut.incrementAndGet();
        log.debug(
            "Health server: request not read within {} ms; closing the connection",
            TimeUnit.NANOSECONDS.toMillis(readTimeoutNanos));
        thread.interrupt();
      }
    }
  }
}
