package dev.tether.health;

import java.time.Duration;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
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
 *       waits behind slow clients). When every thread is busy, the exchange that has been reading
 *       its request the longest is cut off (its thread interrupted, its connection closed) and the
 *       new exchange takes the freed thread, waiting at most {@link #EVICTION_WAIT} for it: a
 *       probe that sends its request promptly is served however many slow clients hold threads
 *       (a slowloris can only evict its own connections). Only when no exchange is still reading
 *       (every thread runs a handler) is the new exchange rejected and the JDK server closes the
 *       connection;
 *   <li>an exchange still reading its request {@code readTimeout} after it started has its thread
 *       interrupted: the socket channel is interruptible, so the blocked read fails, the JDK server
 *       closes that connection, and the thread is free again. Once a handler is entered ({@link
 *       #enterHandler()}), the exchange is never interrupted.
 * </ul>
 *
 * Threads are daemons named {@code tether-health-N} with a small stack ({@value #STACK_BYTES}
 * bytes: they only parse a request head and run a probe), so hundreds of them are cheap; two stay
 * alive, the others end after 30 s idle. Thread-safe; {@link #execute} is called by the JDK
 * server's single dispatcher thread.
 */
final class RequestExecutor implements Executor {
  private static final Logger log = LoggerFactory.getLogger(RequestExecutor.class);
  private static final int CORE_THREADS = 2;

  /** Stack size of the exchange threads. */
  static final long STACK_BYTES = 256 * 1024;

  /** Longest time a new exchange waits for the thread of an exchange it cut off. */
  static final Duration EVICTION_WAIT = Duration.ofMillis(200);

  private final ThreadPoolExecutor pool;
  private final ScheduledThreadPoolExecutor timer;
  private final long readTimeoutNanos;
  private final ThreadLocal<Task> current = new ThreadLocal<>();
  private final AtomicLong rejected = new AtomicLong();
  private final AtomicLong timedOut = new AtomicLong();
  private final AtomicLong evicted = new AtomicLong();
  private final ConcurrentLinkedDeque<Task> reading = new ConcurrentLinkedDeque<>();

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
              Thread t = new Thread(null, r, "tether-health-" + counter.incrementAndGet(), STACK_BYTES);
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
   * Runs the exchange on a pool thread; when every thread is busy, cuts off the exchange that has
   * been reading its request the longest and runs this one on its thread. Blocks the caller for at
   * most {@link #EVICTION_WAIT}.
   *
   * @throws RejectedExecutionException if every thread runs a handler (none is still reading), no
   *     thread came free in time, or the executor is shut down; the JDK server then closes the
   *     connection
   */
  @Override
  public void execute(Runnable exchange) {
    Task task = new Task(exchange);
    long deadline = 0;
    Task victim = null;
    while (true) {
      try {
        pool.execute(task);
        return;
      } catch (RejectedExecutionException e) {
        long now = System.nanoTime();
        if (victim == null && !pool.isShutdown()) {
          // One victim per new exchange: its thread returns to the pool within moments.
          victim = evictOldestReader();
          deadline = now + EVICTION_WAIT.toNanos();
        }
        if (victim != null && !pool.isShutdown() && now - deadline < 0) {
          LockSupport.parkNanos(50_000);
          continue;
        }
        long n = rejected.incrementAndGet();
        log.debug(
            "Health server busy ({} requests in progress, none cut off); closing a new connection"
                + " ({} so far)",
            pool.getActiveCount(),
            n);
        throw e;
      }
    }
  }

  /** Cuts off the exchange reading its request the longest; returns it, or null if none. */
  private Task evictOldestReader() {
    Task t;
    while ((t = reading.pollFirst()) != null) {
      if (t.evict()) {
        return t;
      }
    }
    return null;
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
   * Returns how many slow exchanges were cut off to make room for a new one.
   *
   * @return the count since start
   */
  long evictedCount() {
    return evicted.get();
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
      reading.addLast(this);
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
        reading.remove(this);
        if (timeout != null) {
          timeout.cancel(false);
        }
        current.remove();
        // An interrupt for this exchange (delivered inside the lock above, so already set) must
        // not leak into the next exchange run by this pool thread.
        Thread.interrupted();
      }
    }

    void enterHandler() {
      synchronized (this) {
        if (phase == Phase.READING) {
          phase = Phase.HANDLING;
        }
      }
      reading.remove(this);
    }

    /** Cuts the exchange off if it is still reading; returns whether it was. */
    synchronized boolean evict() {
      if (phase != Phase.READING || thread == null) {
        return false;
      }
      phase = Phase.TIMED_OUT;
      evicted.incrementAndGet();
      log.debug("Health server: every thread busy; cutting off the slowest request to make room");
      thread.interrupt();
      return true;
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
