package dev.tether.loop;

/**
 * A named step of work run by a {@link ToolExecutor}, which beats before and after it. A tool that
 * runs long beats {@link ToolContext#beat()} as it makes progress (for example once per chunk of
 * output).
 *
 * @param <P> the parameter type
 * @param <O> the output type
 */
@FunctionalInterface
public interface Tool<P, O> {

  /**
   * Runs the tool.
   *
   * @param params the parameters
   * @param context the heartbeat and stop signals of the surrounding work
   * @return the output
   * @throws Exception on failure; the executor propagates it after its closing beat
   */
  O run(P params, ToolContext context) throws Exception;
}
