package dev.tether.loop;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Runs named {@link Tool}s and beats the heartbeat before and after each one, so that every tool
 * call counts as progress even when the tool itself never beats. The closing beat happens whether
 * the tool returns or throws: a tool that finished, even by failing, proves the worker is not
 * stuck.
 *
 * <p>Immutable once built and thread-safe; tools run on the calling thread.
 */
public final class ToolExecutor {
  private final Map<String, Tool<?, ?>> tools;

  private ToolExecutor(Map<String, Tool<?, ?>> tools) {
    this.tools = Map.copyOf(tools);
  }

  /**
   * Returns a builder.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Returns the names of the registered tools.
   *
   * @return the names
   */
  public Set<String> toolNames() {
    return tools.keySet();
  }

  /**
   * Runs the tool registered as {@code name}.
   *
   * @param name the tool's name
   * @param params its parameters, of the type the tool was registered with
   * @param context the surrounding work
   * @return the tool's output
   * @throws UnknownToolException if no tool has that name
   * @throws ClassCastException if {@code params} is not of the tool's parameter type
   * @throws Exception whatever the tool throws
   */
  public Object execute(String name, Object params, WorkContext context) throws Exception {
    Objects.requireNonNull(name, "name");
    Tool<?, ?> tool = tools.get(name);
    if (tool == null) {
      throw new UnknownToolException(
          "no tool named '" + name + "'; registered tools: " + tools.keySet());
    }
    return run(name, tool, params, context);
  }

  /**
   * Runs {@code tool} directly, with the same automatic beats.
   *
   * @param name a name for the tool, for its context
   * @param tool the tool
   * @param params its parameters
   * @param context the surrounding work
   * @param <P> the parameter type
   * @param <O> the output type
   * @return the tool's output
   * @throws Exception whatever the tool throws
   */
  public static <P, O> O execute(String name, Tool<P, O> tool, P params, WorkContext context)
      throws Exception {
    Objects.requireNonNull(tool, "tool");
    Objects.requireNonNull(context, "context");
    context.beat();
    try {
      return tool.run(params, new ToolContext(name, context));
    } finally {
      context.beat();
    }
  }

  @SuppressWarnings("unchecked")
  private static <P, O> O run(String name, Tool<P, O> tool, Object params, WorkContext context)
      throws Exception {
    return execute(name, tool, (P) params, context);
  }

  @Override
  public String toString() {
    return "ToolExecutor" + tools.keySet();
  }

  /** Builds a {@link ToolExecutor}. Not thread-safe. */
  public static final class Builder {
    private final Map<String, Tool<?, ?>> tools = new LinkedHashMap<>();

    private Builder() {}

    /**
     * Registers a tool.
     *
     * @param name a unique, non-blank name
     * @param tool the tool
     * @return this builder
     * @throws IllegalArgumentException if the name is blank or already registered
     */
    public Builder tool(String name, Tool<?, ?> tool) {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(tool, "tool");
      if (name.isBlank()) {
        throw new IllegalArgumentException("tool name must not be blank");
      }
      if (tools.putIfAbsent(name, tool) != null) {
        throw new IllegalArgumentException("a tool named '" + name + "' is already registered");
      }
      return this;
    }

    /**
     * Builds the executor.
     *
     * @return the executor
     */
    public ToolExecutor build() {
      return new ToolExecutor(tools);
    }
  }
}
