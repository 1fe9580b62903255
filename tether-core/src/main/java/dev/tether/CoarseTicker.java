package dev.tether;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link Ticker} that trades precision for speed: while running, a daemon thread refreshes a
 * cached {@link System#nanoTime()} reading every {@code resolution}, and {@link #read()} returns
 * that cached value (one volatile load) instead of asking the operating system.
 *
 * <p>Why: on a virtual machine a {@code System.nanoTime()} call costs several times what the rest
 * of a {@link Heartbeat#beat()} costs; with this ticker a beat reads one field instead (the figures
 * are in {@code docs/PERFORMANCE.md}). The default {@link Ticker#system()} already does this by
 * itself while it is read in a tight loop, and reads the clock directly otherwise; use a {@code
 * CoarseTicker} when you want the cache on for a fixed span that you own (start and close),
 * whatever the read rate.
 *
 * <p>Readings share {@code System.nanoTime()}'s origin, lag it by at most about one resolution
 * step (more if the refreshing thread is starved), and after {@link #close()} — or before the
 * thread's first refresh — fall back to {@code System.nanoTime()} itself, so a closed ticker stays
 * correct, only slower. Consequently two readings on different threads may go back by up to one
 * step; {@link Heartbeat}, {@link LeaseExtender} and the watchdog tolerate that.
 *
 * <p>The refreshing thread (named {@code tether-coarse-ticker} unless a thread factory is given)
 * is started by {@link #start} and stopped by {@link #close()}. Thread-safe.
 */
public final class CoarseTicker implements Ticker, AutoCloseable {
  /** Default refresh period: 1 ms, the {@link Heartbeat#RESOLUTION}. */
  public static final Duration DEFAULT_RESOLUTION = Heartbeat.RESOLUTION;

  private static final Logger log = LoggerFactory.getLogger(CoarseTicker.class);

  private final long resolutionNanos;
  private final Thread thread;
  private volatile long now;
  private volatile boolean running;

  private CoarseTicker(Duration resolution, ThreadFactory threadFactory) {
    this.resolutionNanos = resolution.toNanos();
    this.thread = threadFactory.newThread(this::refresh);
    if (thread == null) {
      throw new IllegalArgumentException("thread factory returned null");
    }
    thread.setDaemon(true);
  }

  /**
   * Starts a coarse ticker refreshing every {@link #DEFAULT_RESOLUTION}.
   *
   * @return the running ticker; close it to stop its thread
   */
  public static CoarseTicker start() {
    return start(DEFAULT_RESOLUTION, r -> new Thread(r, "tether-coarse-ticker"));
  }

  /**
   * Starts a coarse ticker.
   *
   * @param resolution refresh period, from 100 µs to 1 s
   * @param threadFactory makes the refreshing thread (set to daemon)
   * @return the running ticker; close it to stop its thread
   * @throws IllegalArgumentException if the resolution is out of range
   */
  public static CoarseTicker start(Duration resolution, ThreadFactory threadFactory) {
    Objects.requireNonNull(resolution, "resolution");
    Objects.requireNonNull(threadFactory, "threadFactory");
    if (resolution.compareTo(Duration.ofNanos(100_000)) < 0
        || resolution.compareTo(Duration.ofSeconds(1)) > 0) {
      throw new IllegalArgumentException(
          "resolution must be between 100 µs and 1 s, was " + resolution);
    }
    CoarseTicker ticker = new CoarseTicker(resolution, threadFactory);
    ticker.now = System.nanoTime();
    ticker.running = true;
    ticker.thread.start();
    return ticker;
  }

  private void refresh() {
    while (running) {
      now = System.nanoTime();
      LockSupport.parkNanos(this, resolutionNanos);
    }
  }

  @Override
  public long read() {
    return running ? now : System.nanoTime();
  }

  /**
   * Returns whether the refreshing thread runs.
   *
   * @return true until closed
   */
  public boolean isRunning() {
    return running;
  }

  /** Stops the refreshing thread; later reads call {@code System.nanoTime()}. Idempotent. */
  @Override
  public void close() {
    if (running) {
      running = false;
      LockSupport.unpark(thread);
      log.debug("CoarseTicker stopped");
    }
  }

  @Override
  public String toString() {
    return "CoarseTicker[resolution=" + Duration.ofNanos(resolutionNanos) + ", running=" + running + "]";
  }
}
