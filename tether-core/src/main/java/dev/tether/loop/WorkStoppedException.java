package dev.tether.loop;

/**
 * Work stopped early because its lease was lost, its message was cancelled, its loop is shutting
 * down, or its deadline passed. A {@link MainLoop} hands the message back at once, without
 * charging the attempt, on {@link Reason#SHUTDOWN}; leaves it alone on {@link Reason#LEASE_LOST}
 * (another delivery owns it) and {@link Reason#CANCELLED}; and treats {@link Reason#DEADLINE} as a
 * handler failure, subject to the dead-letter policy.
 */
public class WorkStoppedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Why the work stopped. */
  public enum Reason {
    /** The lease was lost: another worker may own the message now. */
    LEASE_LOST,
    /** The loop is shutting down. */
    SHUTDOWN,
    /** The work's deadline passed. */
    DEADLINE,
    /** The message was cancelled: it will never be delivered again. */
    CANCELLED
  }

  private final Reason reason;

  /**
   * Creates the exception.
   *
   * @param reason why the work stopped
   * @param message details
   */
  public WorkStoppedException(Reason reason, String message) {
    super(message);
    this.reason = java.util.Objects.requireNonNull(reason, "reason");
  }

  /**
   * Creates the exception with its cause.
   *
   * @param reason why the work stopped
   * @param message details
   * @param cause what revealed it (a refused checkpoint, for example)
   */
  public WorkStoppedException(Reason reason, String message, Throwable cause) {
    super(message, cause);
    this.reason = java.util.Objects.requireNonNull(reason, "reason");
  }

  /**
   * Returns why the work stopped.
   *
   * @return the reason
   */
  public Reason reason() {
    return reason;
  }

  static WorkStoppedException because(WorkContext context) {
    if (context.isCancelled()) {
      return new WorkStoppedException(
          Reason.CANCELLED, "message " + context.messageId().orElse("?") + " was cancelled");
    }
    if (context.isLeaseLost()) {
      return new WorkStoppedException(
          Reason.LEASE_LOST, "lease lost on message " + context.messageId().orElse("?"));
    }
    if (context.isShutdownRequested()) {
      return new WorkStoppedException(Reason.SHUTDOWN, "the loop is shutting down");
    }
    return new WorkStoppedException(Reason.DEADLINE, "deadline passed");
  }
}
