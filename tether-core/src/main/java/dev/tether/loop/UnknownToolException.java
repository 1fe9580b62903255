package dev.tether.loop;

/** A {@link ToolExecutor} was asked to run a tool that is not registered. */
public class UnknownToolException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message which tool, and which are registered
   */
  public UnknownToolException(String message) {
    super(message);
  }
}
