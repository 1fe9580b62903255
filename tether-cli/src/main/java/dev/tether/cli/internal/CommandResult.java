package dev.tether.cli.internal;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonProcessingException;

/**
 * How one run of a command ended, stored as the item's output (JSON). Immutable.
 *
 * @param exitStatus the process exit status (128 + signal number when killed by a signal through a
 *     shell; 143 or 137 for a process Tether killed), or -1 if it could not be started
 * @param durationMs wall time from start to exit, in milliseconds
 * @param stdoutTail the last bytes of standard output, decoded as UTF-8 (malformed bytes replaced
 *     by U+FFFD)
 * @param stderrTail the last bytes of standard error, decoded likewise
 * @param stdoutBytes total bytes written to standard output
 * @param stderrBytes total bytes written to standard error
 * @param chunks output chunks read (each one was a beat)
 * @param stopped why Tether stopped the process early ({@code lease_lost}, {@code shutdown}, {@code
 *     deadline}), or null if it ran to its end
 * @param error why the process could not be started, or null
 */
public record CommandResult(
    @JsonProperty("exit_status") int exitStatus,
    @JsonProperty("duration_ms") long durationMs,
    @JsonProperty("stdout_tail") String stdoutTail,
    @JsonProperty("stderr_tail") String stderrTail,
    @JsonProperty("stdout_bytes") long stdoutBytes,
    @JsonProperty("stderr_bytes") long stderrBytes,
    @JsonProperty("chunks") long chunks,
    @JsonProperty("stopped") String stopped,
    @JsonProperty("error") String error) {

  /** Stop reason: the lease was lost. */
  public static final String STOPPED_LEASE_LOST = "lease_lost";

  /** Stop reason: the worker is shutting down. */
  public static final String STOPPED_SHUTDOWN = "shutdown";

  /** Stop reason: the work's deadline passed. */
  public static final String STOPPED_DEADLINE = "deadline";

  /**
   * Returns whether the command ran to its end with exit status 0.
   *
   * @return true on success
   */
  public boolean succeeded() {
    return exitStatus == 0 && stopped == null && error == null;
  }

  /**
   * Returns a one-line description of a failure, for the item's error message.
   *
   * @return the summary
   */
  public String failureSummary() {
    if (error != null) {
      return "could not start: " + error;
    }
    String last = lastLine(stderrTail);
    if (last.isEmpty()) {
      last = lastLine(stdoutTail);
    }
    return "exit status " + exitStatus + (last.isEmpty() ? "" : ": " + last);
  }

  /**
   * Returns the failure summary followed by the tails of standard error and output (at most
   * {@code maxTail} characters each), as stored in the item's error message: the first line is
   * the summary, the rest the evidence.
   *
   * @param maxTail characters of each tail to include
   * @return the report
   */
  public String failureReport(int maxTail) {
    StringBuilder b = new StringBuilder(failureSummary());
    appendTail(b, "stderr", stderrTail, maxTail);
    appendTail(b, "stdout", stdoutTail, maxTail);
    return b.toString();
  }

  private static void appendTail(StringBuilder b, String name, String tail, int max) {
    if (tail == null || tail.isBlank()) {
      return;
    }
    String t = tail.length() > max ? "…" + tail.substring(tail.length() - max) : tail;
    b.append("\n--- ").append(name).append(" (tail) ---\n").append(t.stripTrailing());
  }

  /**
   * Returns the first line of a stored error (its summary).
   *
   * @param error the error message, may be null
   * @return the first line, or null
   */
  public static String firstLine(String error) {
    if (error == null) {
      return null;
    }
    int nl = error.indexOf('\n');
    return nl < 0 ? error : error.substring(0, nl);
  }

  /**
   * Returns a checkpoint reason on one line: the first line of the error, plus the store's
   * trailing {@code (delivery N of M; ...)} note when the error had several lines.
   *
   * @param reason the reason, may be null
   * @return the one-line reason, or null
   */
  public static String headline(String reason) {
    if (reason == null || reason.indexOf('\n') < 0) {
      return reason;
    }
    String first = firstLine(reason);
    int note = reason.lastIndexOf(" (delivery ");
    return note > first.length() ? first + reason.substring(note) : first;
  }

  private static String lastLine(String s) {
    if (s == null) {
      return "";
    }
    String t = s.strip();
    int nl = t.lastIndexOf('\n');
    String line = nl < 0 ? t : t.substring(nl + 1);
    return line.length() > 200 ? line.substring(0, 200) + "…" : line;
  }

  /**
   * Serializes the result as its stored JSON.
   *
   * @return the JSON text
   */
  public String toJson() {
    try {
      return Json.MAPPER.writeValueAsString(this);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot serialize a command result; indicates a bug", e);
    }
  }

  /**
   * Parses a stored result.
   *
   * @param json the item's output
   * @return the result, or null if the text is not a result
   */
  public static CommandResult fromJsonOrNull(String json) {
    if (json == null || json.isBlank()) {
      return null;
    }
    try {
      return Json.MAPPER.readValue(json, CommandResult.class);
    } catch (JsonProcessingException e) {
      return null;
    }
  }
}
