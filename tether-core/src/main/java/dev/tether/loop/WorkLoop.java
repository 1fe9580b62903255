package dev.tether.loop;

import dev.tether.Heartbeat;
import java.util.Optional;

/**
 * A long-running worker loop that a {@link LoopGroup} runs on its own thread and supervises.
 *
 * <p>{@link #run()} blocks the calling thread until {@link #shutdown()} is called (from any
 * thread) and the loop has finished or handed back its current work. The loop beats {@link
 * #heartbeat()} whenever it makes progress, including while idle (after each receive), so that a
 * watchdog can tell a stalled loop from a quiet one.
 */
public interface WorkLoop {

  /**
   * Returns the loop's name, used for its thread, logs and health reporting.
   *
   * @return the name
   */
  String name();

  /**
   * Runs the loop on the calling thread until shut down.
   *
   * @throws IllegalStateException if the loop is already running or was shut down
   */
  void run();

  /**
   * Asks the loop to stop: no new work, and the work under way should stop too (handing it back).
   * Returns at once. Idempotent, callable from any thread.
   */
  void shutdown();

  /**
   * Asks the loop to take no new work but to let the work under way finish, still proving its
   * progress (a {@link LoopGroup} calls this first, then {@link #shutdown()} when its drain
   * timeout ends). Returns at once. Idempotent, callable from any thread. By default the same as
   * {@link #shutdown()}, for loops that cannot tell the two apart.
   */
  default void drain() {
    shutdown();
  }

  /**
   * Returns whether {@link #run()} is executing and has not yet returned.
   *
   * @return true while running
   */
  boolean isRunning();

  /**
   * Returns whether the loop can do its work now, for example whether its mailbox is reachable. A
   * {@link LoopGroup} is ready only while every loop is running, ready and beating.
   *
   * @return true by default
   */
  default boolean isReady() {
    return true;
  }

  /**
   * Returns the heartbeat this loop beats on progress.
   *
   * @return the heartbeat
   */
  Heartbeat heartbeat();

  /**
   * Returns the loop's timeouts, when it has them, so that a group can check them against its
   * watchdog (see {@link Calibration}).
   *
   * @return the configuration, or empty
   */
  default Optional<MainLoopConfig> config() {
    return Optional.empty();
  }
}
