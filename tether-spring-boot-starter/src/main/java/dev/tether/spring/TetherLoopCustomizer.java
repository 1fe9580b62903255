package dev.tether.spring;

import dev.tether.loop.MainLoop;

/**
 * Adjusts each loop the starter builds before it is built: listeners (metrics, tracing), a
 * heartbeat, a ticker. Beans of this type are applied in their {@code @Order}.
 */
@FunctionalInterface
public interface TetherLoopCustomizer {

  /**
   * Customizes one loop.
   *
   * @param queue the handler's queue
   * @param builder the loop's builder
   */
  void customize(String queue, MainLoop.Builder<?, ?> builder);

  /**
   * Sees each loop once built, before it runs (to watch its heartbeat, say). Does nothing by
   * default.
   *
   * @param queue the handler's queue
   * @param loop the loop
   */
  default void built(String queue, MainLoop<?, ?> loop) {}
}
