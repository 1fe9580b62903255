package dev.tether.loop;

import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Interrupts a handler's thread when its deadline passes. One daemon thread ({@code
 * tether-deadline}) serves every loop of the process; it is started the first time a loop with a
 * deadline handles a message, and costs nothing while no deadline is pending. Thread-safe.
 */
class DeadlineTimer {
  private static final Logger log = LoggerFactory.getLogger(DeadlineTimer.class);

  private static final class Holder {
    static final DeadlineTimer SHARED = new DeadlineTimer();
  }

  private final ScheduledThreadPoolExecutor executor;

  DeadlineTimer() {
    executor = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "tether-deadline");
      t.setDaemon(true);
      return t;
    });
    executor.setRemoveOnCancelPolicy(true);
  }

  /** The process-wide timer. */
  static DeadlineTimer shared() {
    return Holder.SHARED;
  }

  /**
   * Interrupts {@code thread} after {@code delay} unless the returned watch is cancelled first;
   * runs {@code onFire} (a log line) just before interrupting.
   */
  Watch interruptAt(Thread thread, Duration delay, Runnable onFire) {
    Watch w = new Watch(thread, onFire);
    synchronized (w) {
      w.future = executor.schedule(w::fire, delay.toNanos(), TimeUnit.NANOSECONDS);
    }
    return w;
  }

  /** One pending interruption. */
  static final class Watch {
    private final Thread thread;
    private final Runnable onFire;
    private ScheduledFuture<?> future; // guarded by this
    private boolean fired; // guarded by this
    private boolean cancelled; // guarded by this

    Watch(Thread thread, Runnable onFire) {
      this.thread = thread;
      this.onFire = onFire;
    }

    synchronized void fire() {
      if (cancelled || fired) {
        return;
      }
      fired = true;
      try {
        onFire.run();
      } catch (RuntimeException e) {
        log.warn("Deadline callback failed; interrupting anyway", e);
      }
      thread.interrupt();
    }

    /**
     * Cancels the interruption if it has not happened; returns whether it happened (then the
     * watched thread's interrupt flag may be set on the caller's behalf and should be cleared).
     */
    synchronized boolean cancel() {
      if (!fired) {
        cancelled = true;
        if (future != null) {
          future.cancel(false);
        }
      }
      return fired;
    }
  }
}
