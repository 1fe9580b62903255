package dev.tether;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The clock behind {@link Ticker#system()}: {@link System#nanoTime()}, served from a cached reading
 * while — and only while — it is read in a tight loop.
 *
 * <p>Why: on a virtual machine {@code System.nanoTime()} is nearly all of what a {@link
 * Heartbeat#beat()} costs, and a cached reading costs one load. But keeping a cache fresh costs a
 * thread that wakes every millisecond, a steady share of a core, which pays for itself only while
 * the clock is read in a tight loop (the figures are in {@code docs/PERFORMANCE.md}). So the cache
 * is off
 * (readings go straight to {@code System.nanoTime()}) until {@value #FAST_READS_TO_START}
 * consecutive direct readings arrive less than {@value #FAST_GAP_NANOS} ns apart; then one daemon
 * thread, {@code tether-clock}, refreshes the cached reading every {@value #TICK_NANOS} ns, and
 * goes back to sleep (parked, no CPU) when fewer than {@value #MIN_TOUCHED_TICKS} of the last
 * {@value #WINDOW_TICKS} refreshes were read. A process that never beats in a tight loop never
 * starts the thread. Setting the system property {@code tether.clock.cache} to {@code false}
 * turns the cache off for the whole process.
 *
 * <p>Cached readings lag {@code System.nanoTime()} by at most one refresh period (more if the
 * thread is starved of CPU) and never lead it, so a deadline measured on this clock is never
 * early. The one exception to monotonicity: at the instant caching starts, a reading may be lower
 * than a direct reading another thread took microseconds before; everything in Tether compares
 * readings with {@code a - b} and tolerates that. If the refreshing thread ever dies, readings go
 * straight to {@code System.nanoTime()} for good.
 */
final class SystemClock {
  /** Refresh period while caching, in nanoseconds. */
  static final long TICK_NANOS = 1_000_000L;

  /** Direct readings closer together than this count towards starting the cache. */
  static final long FAST_GAP_NANOS = 2_000L;

  /** Consecutive fast direct readings that start the cache. */
  static final int FAST_READS_TO_START = 1_000;

  /** Refreshes per look-back window. */
  static final int WINDOW_TICKS = 100;

  /** Below this many read refreshes in a window, caching stops. */
  static final int MIN_TOUCHED_TICKS = 50;

  static final SystemClock INSTANCE =
      new SystemClock(
          System::nanoTime,
          TICK_NANOS,
          r -> {
            Thread t = new Thread(r, "tether-clock");
            t.setDaemon(true);
            return t;
          },
          !"false".equalsIgnoreCase(System.getProperty("tether.clock.cache")));

  private static final Logger log = LoggerFactory.getLogger(SystemClock.class);
  private static final long NOT_CACHING = Long.MIN_VALUE;
  private static final int DORMANT = 0;
  private static final int CACHING = 1;
  private static final int DEAD = 2;

  private final LongSupplier source;
  private final long tickNanos;
  private final ThreadFactory threadFactory;
  private final boolean enabled;
  private final AtomicInteger state = new AtomicInteger(DORMANT);

  /** The cached reading, or {@link #NOT_CACHING}. */
  private volatile long cached = NOT_CACHING;

  /** Set by a reader of a cached value (check first, so at most one write per refresh). */
  private volatile boolean touched;

  private volatile Thread thread;

  // Approximate, deliberately racy counters of the direct path (only a heuristic reads them).
  private long lastDirect;
  private int fastReads;

  SystemClock(LongSupplier source, long tickNanos, ThreadFactory threadFactory, boolean enabled) {
    this.source = source;
    this.tickNanos = tickNanos;
    this.threadFactory = threadFactory;
    this.enabled = enabled;
  }

  long read() {
    long c = cached;
    if (c != NOT_CACHING) {
      if (!touched) {
        touched = true;
      }
      return c;
    }
    return direct();
  }

  private long direct() {
    long now = source.getAsLong();
    if (enabled) {
      long previous = lastDirect;
      lastDirect = now;
      if (now - previous < FAST_GAP_NANOS) {
        if (++fastReads >= FAST_READS_TO_START) {
          fastReads = 0;
          wake();
        }
      } else if (fastReads != 0) {
        fastReads = 0;
      }
    }
    return now;
  }

  /** Whether readings are currently served from the cache. */
  boolean isCaching() {
    return cached != NOT_CACHING;
  }

  /** Whether the refreshing thread has been started (it may be parked). */
  boolean hasThread() {
    return thread != null;
  }

  /** Stops caching for good and ends the refreshing thread (tests). */
  void shutdown() {
    state.set(DEAD);
    cached = NOT_CACHING;
    Thread t = thread;
    if (t != null) {
      LockSupport.unpark(t);
    }
  }

  private void wake() {
    if (!state.compareAndSet(DORMANT, CACHING)) {
      return;
    }
    Thread t = thread;
    if (t != null) {
      LockSupport.unpark(t);
      return;
    }
    try {
      t = threadFactory.newThread(this::refresh);
      if (t == null) {
        throw new IllegalStateException("thread factory returned null");
      }
      thread = t;
      t.start();
      log.debug("Clock cache started: the clock is read in a tight loop");
    } catch (RuntimeException | Error e) {
      state.set(DEAD);
      log.warn("Could not start the clock cache thread; reading System.nanoTime() directly", e);
    }
  }

  private void refresh() {
    int window = 0;
    int touchedTicks = 0;
    try {
      while (true) {
        Thread.interrupted(); // an interrupt must not turn the parks below into a busy loop
        int s = state.get();
        if (s == DEAD) {
          return;
        }
        if (s == DORMANT) {
          LockSupport.park(this);
          window = 0;
          touchedTicks = 0;
          continue;
        }
        cached = source.getAsLong();
        if (touched) {
          touched = false;
          touchedTicks++;
        }
        if (++window == WINDOW_TICKS) {
          if (touchedTicks < MIN_TOUCHED_TICKS) {
            cached = NOT_CACHING;
            // a reader may wake us between these two writes: its unpark makes the park return
            state.compareAndSet(CACHING, DORMANT);
            continue;
          }
          window = 0;
          touchedTicks = 0;
        }
        LockSupport.parkNanos(this, tickNanos);
      }
    } catch (RuntimeException | Error e) {
      log.error("Clock cache thread failed; reading System.nanoTime() directly from now on", e);
    } finally {
      state.set(DEAD);
      cached = NOT_CACHING;
    }
  }
}
