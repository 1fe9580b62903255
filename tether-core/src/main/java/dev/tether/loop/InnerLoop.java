package dev.tether.loop;

import java.util.Objects;

/**
 * Runs a step function until it reports completion, beating the heartbeat at the start of every
 * iteration, so that each iteration counts as progress without the step beating itself, and
 * stopping early when the work should stop (lease lost, shutdown requested, or deadline passed).
 *
 * <p>Stateless and thread-safe; steps run on the calling thread.
 */
public final class InnerLoop {
  private InnerLoop() {}

  /**
   * One iteration of an inner loop.
   *
   * @param <S> the state carried between iterations
   */
  @FunctionalInterface
  public interface Step<S> {
    /**
     * Runs one iteration.
     *
     * @param state the state from the previous iteration (the initial state first)
     * @param context the surrounding work
     * @return the next state, or null when the loop is done
     * @throws Exception to abort the loop
     */
    S next(S state, WorkContext context) throws Exception;
  }

  /**
   * Runs {@code step} from {@code initial} until it returns null.
   *
   * @param initial the initial state; not null
   * @param context the surrounding work, beaten once per iteration
   * @param step the step function
   * @param <S> the state type
   * @return the last non-null state
   * @throws WorkStoppedException if the work should stop before the step function finished; the
   *     exception says why
   * @throws Exception whatever a step throws
   */
  public static <S> S run(S initial, WorkContext context, Step<S> step) throws Exception {
    Objects.requireNonNull(initial, "initial");
    Objects.requireNonNull(context, "context");
    Objects.requireNonNull(step, "step");
    S state = initial;
    while (true) {
      context.beat();
      if (context.shouldStop()) {
        throw WorkStoppedException.because(context);
      }
      S next = step.next(state, context);
      if (next == null) {
        return state;
      }
      state = next;
    }
  }
}
