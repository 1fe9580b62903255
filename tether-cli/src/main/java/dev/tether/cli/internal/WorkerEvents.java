package dev.tether.cli.internal;

import java.time.Duration;

/**
 * Observes a {@link Worker}: what happens to each item, for narration, logs and metrics. Methods
 * run on worker threads, must be fast and should not throw (exceptions are logged and ignored).
 */
public interface WorkerEvents {
  /** Ignores everything. */
  WorkerEvents NONE = new WorkerEvents() {};

  /**
   * An item's command started.
   *
   * @param itemId the item
   * @param delivery its delivery count
   * @param spec the command
   */
  default void started(String itemId, int delivery, CommandSpec spec) {}

  /**
   * The lease of an item was extended because its command proved progress.
   *
   * @param itemId the item
   * @param extension how far from now
   */
  default void extended(String itemId, Duration extension) {}

  /**
   * The lease of an item was lost (expired or taken over); its command is being killed.
   *
   * @param itemId the item
   */
  default void leaseLost(String itemId) {}

  /**
   * An item's command finished (successfully or not) and its outcome was recorded.
   *
   * @param itemId the item
   * @param delivery its delivery count
   * @param result how the command ended
   * @param took how long the handler took
   */
  default void finished(String itemId, int delivery, CommandResult result, Duration took) {}

  /**
   * An item was handed back, not charged: the worker is shutting down or draining, or its command
   * stopped because the store could not be reached.
   *
   * @param itemId the item
   */
  default void handedBack(String itemId) {}
}
