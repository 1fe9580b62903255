package dev.tether.langchain4j;

import dev.tether.LeaseExtenderConfig;
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
 * <p>Rules, each checked and logged as a warning naming the values and the remedy:
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
  /** Rule: {@code longest_model_call < min(visibility_timeout, extension) - interval}. */
  public static final String MODEL_CALL_WITHIN_LEASE =
      "longest_model_call < min(visibility_timeout, extension) - interval";

  /** Rule (lease extender disabled): {@code longest_model_call < visibility_timeout}. */
  public static final String MODEL_CALL_WITHIN_VISIBILITY =
      "longest_model_call < visibility_timeout";

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
   * @param config the loop's configuration
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
    Optional<String> loop = Optional.of(loopName);
    List<Calibration.Violation> out = new ArrayList<>();
    Duration visibility = config.visibilityTimeout();
    LeaseExtenderConfig extender = config.leaseExtender();
    String call = "longest_model_call=" + format(longestModelCall);
    if (extender.enabled()) {
      Duration lease = (extender.extension().compareTo(visibility) < 0 ? extender.extension() : visibility)
          .minus(extender.interval());
      if (longestModelCall.compareTo(lease) >= 0) {
        Duration needed = longestModelCall.plus(extender.interval());
        out.add(new Calibration.Violation(loop, MODEL_CALL_WITHIN_LEASE, call
            + ", visibility_timeout=" + format(visibility)
            + ", extension=" + format(extender.extension())
            + ", interval=" + format(extender.interval())
            + " (after a beat the lease is only sure to last " + format(lease) + ")"
            + "; raise the lease extension and visibilityTimeout above " + format(needed)
            + " (or lower the interval), or bound the model call (client timeout, retries)"));
      }
    } else if (longestModelCall.compareTo(visibility) >= 0) {
      out.add(new Calibration.Violation(loop, MODEL_CALL_WITHIN_VISIBILITY, call
          + ", visibility_timeout=" + format(visibility) + " (lease extender disabled)"
          + "; enable the lease extender, or raise visibilityTimeout above the whole run"));
    }
    if (config.deadline().isPresent() && longestModelCall.compareTo(config.deadline().get()) >= 0) {
      out.add(new Calibration.Violation(loop, MODEL_CALL_WITHIN_DEADLINE, call
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
