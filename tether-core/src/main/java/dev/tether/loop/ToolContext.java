package dev.tether.loop;

import java.util.Objects;
import java.util.Optional;

/**
 * What a {@link Tool} knows while it runs: its name and the surrounding {@link WorkContext}. A tool
 * that runs long calls {@link #beat()} as it makes progress, so that its work keeps the lease.
 * Immutable and thread-safe.
 */
public final class ToolContext {
  private final String toolName;
  private final WorkContext work;

  /**
   * Creates a context for one tool call.
   *
   * @param toolName the tool's name
   * @param work the surrounding work
   */
  public ToolContext(String toolName, WorkContext work) {
    this.toolName = Objects.requireNonNull(toolName, "toolName");
    this.work = Objects.requireNonNull(work, "work");
  }

  /** Records progress; may extend the lease of the message being worked on. */
  public void beat() {
    work.beat();
  }

  /**
   * Returns the name of the running tool.
   *
   * @return the name
   */
  public String toolName() {
    return toolName;
  }

  /**
   * Returns the surrounding work context.
   *
   * @return the work context
   */
  public WorkContext work() {
    return work;
  }

  /**
   * Returns the deadline of the surrounding work, if any.
   *
   * @return the deadline, or empty
   */
  public Optional<Deadline> deadline() {
    return work.deadline();
  }

  /**
   * Returns whether the tool should stop early (lease lost, shutdown, or deadline passed).
   *
   * @return true if the surrounding work should stop
   */
  public boolean shouldStop() {
    return work.shouldStop();
  }

  @Override
  public String toString() {
    return "ToolContext[" + toolName + ", " + work + "]";
  }
}
