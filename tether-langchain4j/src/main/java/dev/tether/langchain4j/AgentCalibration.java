package dev.tether.langchain4j;

import dev.tether.loop.Calibration;
import dev.tether.loop.MainLoopConfig;
import dev.tether.loop.WorkLoop;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Checks that a loop's lease outlasts the longest model call its agent runs may make. A
 * non-streaming model call gives no beat for its whole duration: the beat just before it extends
 * the lease only when an extension is due, so after that beat the lease is only sure to last
 * {@code min(visibility_timeout, extension) - interval} (the extension made up to one interval
 * earlier, or the visibility timeout of the receive). A call that takes longer lets the lease
 * run out, and the run is stopped as lease-lost at its next call (or the item is taken over).
 *
 * <p>The usual way is to declare the longest model call on the loop's configuration, {@link
 * MainLoopConfig.Builder#longestSilentCall(Duration)}: the loop group checks it when it is built
 * ({@link dev.tether.loop.LoopGroup.Builder#build()}, which fails in its default calibration mode
 * and logs a warning in {@link Calibration.Mode#WARN}). This class checks a loop on its own, for
 * a longest model call given here, and logs each violation as a warning. Rules, the first two
 * being {@link Calibration}'s:
 *
 * <ol>
 *   <li>{@link #MODEL_CALL_WITHIN_LEASE} when the loop's lease extender is enabled;
 *   <li>{@link #MODEL_CALL_WITHIN_VISIBILITY} when it is disabled (the whole run must then fit in
 *       the visibility timeout);
 *   <li>{@link #MODEL_CALL_WITHIN_DEADLINE} when the loop has a deadline.
 * </ol>
 *
 * The longest model call is the model client's timeout times its attempts (1 + retries) plus the
 * retries' backoff, not a typical latency. For a streaming model, it is the longest wait for the
 * first token or between two tokens. Stateless and thread-safe.
 */
public final class AgentCalibration {
  /**
   * Rule: {@code longest_silent_call < min(visibility_timeout, extension) - interval}, with the
   * longest model call as the longest silent call ({@link Calibration#SILENT_CALL_WITHIN_LEASE}).
   */
  public static final String MODEL_CALL_WITHIN_LEASE = Calibration.SILENT_CALL_WITHIN_LEASE;

  /**
   * Rule (lease extender disabled): {@code longest_silent_call < visibility_timeout} ({@link
   * Calibration#SILENT_CALL_WITHIN_VISIBILITY}).
   */
  public static final String MODEL_CALL_WITHIN_VISIBILITY = Calibration.SILENT_CALL_WITHIN_VISIBILITY;

  /** Rule: {@code longest_model_call < deadline}. */
  public static final String MODEL_CALL_WITHIN_DEADLINE = "longest_model_call < deadline";

  private static final Logger log = LoggerFactory.getLogger(AgentCalibration.class);

  private AgentCalibration() {}

  /**
   * Checks a loop (its {@link WorkLoop#config()}) and logs every violation as a warning.
   *
   * @param loop the loop whose handler runs agents
   * @param longestModelCall the longest a single model call may take
   * @return the violations, empty when calibrated or when the loop exposes no configuration (then
   *     logged as not checked)
   * @throws IllegalArgumentException if {@code longestModelCall} is not positive
   */
  public static List<Calibration.Violation> check(WorkLoop loop, Duration longestModelCall) {
    Objects.requireNonNull(loop, "loop");
    Optional<MainLoopConfig> config = loop.config();
    if (config.isEmpty()) {
      log.warn("Loop '{}' exposes no MainLoopConfig: its lease was not checked against a longest"
          + " model call of {}", loop.name(), format(longestModelCall));
      return List.of();
    }
    return check(loop.name(), config.get(), longestModelCall);
  }

  /**
   * Checks a loop's configuration and logs every violation as a warning.
   *
   * @param loopName the loop's name, for the messages
   * @param config the loop's configuration (a longest silent call declared there is replaced by
   *     {@code longestModelCall} for this check)
   * @param longestModelCall the longest a single model call may take
   * @return the violations in rule order; empty when calibrated
   * @throws IllegalArgumentException if {@code longestModelCall} is not positive
   */
  public static List<Calibration.Violation> check(
      String loopName, MainLoopConfig config, Duration longestModelCall) {
    Objects.requireNonNull(loopName, "loopName");
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(longestModelCall, "longestModelCall");
    if (longestModelCall.isNegative() || longestModelCall.isZero()) {
      throw new IllegalArgumentException("longestModelCall must be > 0, was " + longestModelCall);
    }
    List<Calibration.Violation> out = new ArrayList<>();
    MainLoopConfig declared = config.toBuilder().longestSilentCall(longestModelCall).build();
    for (Calibration.Violation v : Calibration.checkLoop(loopName, declared, Optional.empty())) {
      if (v.rule().equals(MODEL_CALL_WITHIN_LEASE) || v.rule().equals(MODEL_CALL_WITHIN_VISIBILITY)) {
        out.add(v);
      }
    }
    if (config.deadline().isPresent() && longestModelCall.compareTo(config.deadline().get()) >= 0) {
      out.add(new Calibration.Violation(Optional.of(loopName), MODEL_CALL_WITHIN_DEADLINE,
          "longest_model_call=" + format(longestModelCall)
          + ", deadline=" + format(config.deadline().get())
          + "; a single model call cannot finish in time: raise the deadline"));
    }
    for (Calibration.Violation v : out) {
      log.warn("Agent calibration: {}", v);
    }
    return List.copyOf(out);
  }

  private static String format(Duration d) {
    BigDecimal seconds = BigDecimal.valueOf(d.getSeconds()).add(BigDecimal.valueOf(d.getNano(), 9));
    return seconds.stripTrailingZeros().toPlainString() + "s";
  }
}
