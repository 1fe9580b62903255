package dev.tether.loop;

import dev.tether.LeaseExtenderConfig;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Checks that a group's timeouts fit together, so that a healthy worker keeps its leases, a stalled
 * one is ended before its message goes to another worker, and a busy loop is never taken for a
 * stalled one. Stateless and thread-safe.
 *
 * <h2>Rules</h2>
 *
 * For every loop that exposes a {@link MainLoopConfig} ({@link WorkLoop#config()}), where {@code
 * max_processing_time} is the loop's {@link MainLoopConfig#deadline()} (enforced: a handler past
 * it is interrupted and its lease no longer extended). A loop without a deadline promises nothing
 * about processing time: the two rules that need it are then checked with 0 only (a necessary
 * condition) and {@linkplain #report reported} as not checked, naming the loop, so that the
 * group's error (or, when nothing is violated, its debug log) says which rules it could not
 * check:
 *
 * <ol>
 *   <li>{@link #VISIBILITY_COVERS_WATCHDOG} {@code visibility_timeout > watchdog_threshold +
 *       max_processing_time}: a message is not redelivered while the worker that holds it could
 *       still be alive (watchdog only);
 *   <li>{@link #WATCHDOG_COVERS_WORK} {@code watchdog_threshold > wait_time + max_processing_time}:
 *       a loop that is merely long-polling and then processing is never taken for stalled
 *       (watchdog only);
 *   <li>{@link #EXTENSION_INTERVAL} {@code interval < extension / 2}: a steadily beating worker
 *       extends before its lease runs out (lease extender enabled only);
 *   <li>{@link #EXTENSION_BELOW_VISIBILITY} {@code extension < visibility_timeout} (lease extender
 *       enabled only);
 *   <li>{@link #SILENT_CALL_WITHIN_LEASE} {@code longest_silent_call < min(visibility_timeout,
 *       extension) - interval} (lease extender enabled), or {@link #SILENT_CALL_WITHIN_VISIBILITY}
 *       {@code longest_silent_call < visibility_timeout} (disabled), when the loop declares its
 *       {@link MainLoopConfig#longestSilentCall() longest silent call}: a call that gives no beat
 *       while it runs (a non-streaming model call) ends before the lease runs out. A beat extends
 *       the lease only when an extension is due (at most once per interval), so after the beat
 *       before such a call the lease is only sure to last the extension made up to one interval
 *       earlier (or the visibility timeout of the receive) minus that interval.
 * </ol>
 *
 * And once for the group, when a watchdog is configured: {@link #WATCHDOG_INTERVAL} {@code
 * watchdog_interval < watchdog_threshold / 3}. (The watchdog itself also wakes at the earliest
 * possible stall, so the interval is only an upper bound between checks; the rule keeps the
 * configuration valid for a watchdog that only polls.) Loops without a configuration
 * are checked against this group rule only.
 *
 * <p>{@link LoopGroup.Builder#build()} applies these checks according to its {@link Mode}: by
 * default ({@link Mode#ERROR}) any violation fails the build with an {@link
 * IllegalArgumentException} listing all of them.
 */
public final class Calibration {
  /** Rule: {@code visibility_timeout > watchdog_threshold + max_processing_time}. */
  public static final String VISIBILITY_COVERS_WATCHDOG =
      "visibility_timeout > watchdog_threshold + max_processing_time";

  /** Rule: {@code watchdog_threshold > wait_time + max_processing_time}. */
  public static final String WATCHDOG_COVERS_WORK =
      "watchdog_threshold > wait_time + max_processing_time";

  /** Rule: {@code watchdog_interval < watchdog_threshold / 3}. */
  public static final String WATCHDOG_INTERVAL = "watchdog_interval < watchdog_threshold / 3";

  /** Rule: {@code interval < extension / 2} (lease extender). */
  public static final String EXTENSION_INTERVAL = "interval < extension / 2";

  /** Rule: {@code extension < visibility_timeout} (lease extender). */
  public static final String EXTENSION_BELOW_VISIBILITY = "extension < visibility_timeout";

  /**
   * Rule (lease extender enabled): {@code longest_silent_call < min(visibility_timeout, extension)
   * - interval}.
   */
  public static final String SILENT_CALL_WITHIN_LEASE =
      "longest_silent_call < min(visibility_timeout, extension) - interval";

  /** Rule (lease extender disabled): {@code longest_silent_call < visibility_timeout}. */
  public static final String SILENT_CALL_WITHIN_VISIBILITY =
      "longest_silent_call < visibility_timeout";

  private Calibration() {}

  /** What a group does with violated rules. */
  public enum Mode {
    /** Fail the build with an {@link IllegalArgumentException} listing every violation (default). */
    ERROR,
    /** Log every violation as a warning and build anyway. */
    WARN,
    /** Do not check. */
    OFF
  }

  /**
   * One violated rule.
   *
   * @param loop the loop's name, or empty for the group-wide rule
   * @param rule the rule, one of this class's constants
   * @param values the values involved, for example {@code visibility_timeout=900s,
   *     watchdog_threshold=720s, max_processing_time=600s}
   */
  public record Violation(Optional<String> loop, String rule, String values) {
    /**
     * Validates the fields.
     *
     * @param loop the loop's name, or empty for the group-wide rule
     * @param rule the rule
     * @param values the values involved
     * @throws NullPointerException if a field is null
     */
    public Violation {
      Objects.requireNonNull(loop, "loop");
      Objects.requireNonNull(rule, "rule");
      Objects.requireNonNull(values, "values");
    }

    /**
     * Returns a one-line description naming the loop, the rule and the values.
     *
     * @return the description
     */
    @Override
    public String toString() {
      return loop.map(l -> "loop '" + l + "': ").orElse("group: ")
          + "rule "
          + rule
          + " violated: "
          + values;
    }
  }

  /**
   * A rule that could not be checked for a loop.
   *
   * @param loop the loop's name
   * @param rule the rule, one of this class's constants
   * @param why why not, and what would make it checkable
   */
  public record Unchecked(String loop, String rule, String why) {
    /**
     * Validates the fields.
     *
     * @param loop the loop's name
     * @param rule the rule
     * @param why why not
     * @throws NullPointerException if a field is null
     */
    public Unchecked {
      Objects.requireNonNull(loop, "loop");
      Objects.requireNonNull(rule, "rule");
      Objects.requireNonNull(why, "why");
    }

    @Override
    public String toString() {
      return "loop '" + loop + "': rule " + rule + " not checked: " + why;
    }
  }

  /**
   * The outcome of checking a group: what is violated and what could not be checked.
   *
   * @param violations every violated rule (empty when calibrated)
   * @param unchecked every rule that could not be checked, by loop
   */
  public record Report(List<Violation> violations, List<Unchecked> unchecked) {
    /**
     * Copies the lists.
     *
     * @param violations the violations
     * @param unchecked the rules not checked
     */
    public Report {
      violations = List.copyOf(violations);
      unchecked = List.copyOf(unchecked);
    }
  }

  /**
   * Checks the loops of a group against its watchdog and says which rules could not be checked.
   *
   * @param loops the loops; those whose {@link WorkLoop#config()} is empty get no per-loop check
   * @param watchdogThreshold the stall threshold, or empty when the group has no watchdog
   * @param watchdogInterval the watchdog's check interval (ignored without a watchdog)
   * @return the violations (as {@link #check}) and the rules not checked
   */
  public static Report report(
      Collection<? extends WorkLoop> loops,
      Optional<Duration> watchdogThreshold,
      Duration watchdogInterval) {
    List<Violation> violations = check(loops, watchdogThreshold, watchdogInterval);
    List<Unchecked> unchecked = new ArrayList<>();
    if (watchdogThreshold.isPresent()) {
      for (WorkLoop loop : loops) {
        Optional<MainLoopConfig> config = loop.config();
        if (config.isPresent() && config.get().deadline().isEmpty()) {
          String why = "the loop has no deadline, so its longest processing time is unknown"
              + " (checked with 0 only); set MainLoopConfig.deadline to the longest a message may"
              + " take";
          unchecked.add(new Unchecked(loop.name(), VISIBILITY_COVERS_WATCHDOG, why));
          unchecked.add(new Unchecked(loop.name(), WATCHDOG_COVERS_WORK, why));
        }
      }
    }
    return new Report(violations, unchecked);
  }

  /**
   * Checks the loops of a group against its watchdog.
   *
   * @param loops the loops; those whose {@link WorkLoop#config()} is empty get no per-loop check
   * @param watchdogThreshold the stall threshold, or empty when the group has no watchdog
   * @param watchdogInterval the watchdog's check interval (ignored without a watchdog)
   * @return every violation, loops in the given order, the group rule first; empty when calibrated
   */
  public static List<Violation> check(
      Collection<? extends WorkLoop> loops,
      Optional<Duration> watchdogThreshold,
      Duration watchdogInterval) {
    Objects.requireNonNull(loops, "loops");
    Objects.requireNonNull(watchdogThreshold, "watchdogThreshold");
    Objects.requireNonNull(watchdogInterval, "watchdogInterval");
    List<Violation> out = new ArrayList<>(checkGroup(watchdogThreshold, watchdogInterval));
    for (WorkLoop loop : loops) {
      Optional<MainLoopConfig> config = loop.config();
      config.ifPresent(c -> out.addAll(checkLoop(loop.name(), c, watchdogThreshold)));
    }
    return List.copyOf(out);
  }

  /**
   * Checks the group-wide rule {@link #WATCHDOG_INTERVAL}.
   *
   * @param watchdogThreshold the stall threshold, or empty when the group has no watchdog
   * @param watchdogInterval the watchdog's check interval
   * @return the violation, if any
   */
  public static List<Violation> checkGroup(
      Optional<Duration> watchdogThreshold, Duration watchdogInterval) {
    if (watchdogThreshold.isEmpty()) {
      return List.of();
    }
    Duration threshold = watchdogThreshold.get();
    // interval < threshold / 3  <=>  3 * interval < threshold, exact in nanoseconds
    if (watchdogInterval.multipliedBy(3).compareTo(threshold) >= 0) {
      return List.of(
          new Violation(
              Optional.empty(),
              WATCHDOG_INTERVAL,
              "watchdog_interval="
                  + format(watchdogInterval)
                  + ", watchdog_threshold="
                  + format(threshold)
                  + " (threshold / 3 = "
                  + format(threshold.dividedBy(3))
                  + "); lower watchdogInterval or raise watchdogThreshold"));
    }
    return List.of();
  }

  /**
   * Checks one loop's configuration (the per-loop rules).
   *
   * @param loopName the loop's name, for the messages
   * @param config the loop's configuration
   * @param watchdogThreshold the stall threshold, or empty when the group has no watchdog
   * @return the violations, in rule order; empty when calibrated
   */
  public static List<Violation> checkLoop(
      String loopName, MainLoopConfig config, Optional<Duration> watchdogThreshold) {
    Objects.requireNonNull(loopName, "loopName");
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(watchdogThreshold, "watchdogThreshold");
    Optional<String> loop = Optional.of(loopName);
    List<Violation> out = new ArrayList<>();
    Duration visibility = config.visibilityTimeout();
    Duration wait = config.waitTime();
    Duration processing = config.deadline().orElse(Duration.ZERO);
    String processingText =
        "max_processing_time="
            + format(processing)
            + (config.deadline().isPresent() ? " (deadline)" : " (no deadline set, counted as 0)");

    if (watchdogThreshold.isPresent()) {
      Duration threshold = watchdogThreshold.get();
      if (visibility.compareTo(threshold.plus(processing)) <= 0) {
        out.add(
            new Violation(
                loop,
                VISIBILITY_COVERS_WATCHDOG,
                "visibility_timeout="
                    + format(visibility)
                    + ", watchdog_threshold="
                    + format(threshold)
                    + ", "
                    + processingText
                    + "; raise visibilityTimeout above "
                    + format(threshold.plus(processing))
                    + " or lower watchdogThreshold"));
      }
      if (threshold.compareTo(wait.plus(processing)) <= 0) {
        out.add(
            new Violation(
                loop,
                WATCHDOG_COVERS_WORK,
                "watchdog_threshold="
                    + format(threshold)
                    + ", wait_time="
                    + format(wait)
                    + ", "
                    + processingText
                    + "; raise watchdogThreshold above "
                    + format(wait.plus(processing))
                    + " or lower waitTime or deadline"));
      }
    }

    LeaseExtenderConfig extender = config.leaseExtender();
    if (extender.enabled()) {
      // interval < extension / 2  <=>  2 * interval < extension
      if (extender.interval().multipliedBy(2).compareTo(extender.extension()) >= 0) {
        out.add(
            new Violation(
                loop,
                EXTENSION_INTERVAL,
                "interval="
                    + format(extender.interval())
                    + ", extension="
                    + format(extender.extension())
                    + " (extension / 2 = "
                    + format(extender.extension().dividedBy(2))
                    + "); lower the lease extender interval or raise its extension"));
      }
      if (extender.extension().compareTo(visibility) >= 0) {
        out.add(
            new Violation(
                loop,
                EXTENSION_BELOW_VISIBILITY,
                "extension="
                    + format(extender.extension())
                    + ", visibility_timeout="
                    + format(visibility)
                    + "; lower the lease extension or raise visibilityTimeout"));
      }
    }
    config.longestSilentCall().ifPresent(call -> out.addAll(checkSilentCall(loop, config, call)));
    return out;
  }

  private static List<Violation> checkSilentCall(
      Optional<String> loop, MainLoopConfig config, Duration call) {
    Duration visibility = config.visibilityTimeout();
    LeaseExtenderConfig extender = config.leaseExtender();
    String values = "longest_silent_call=" + format(call) + ", visibility_timeout=" + format(visibility);
    if (extender.enabled()) {
      Duration reach = extender.extension().compareTo(visibility) < 0 ? extender.extension() : visibility;
      Duration sure = reach.minus(extender.interval());
      if (call.compareTo(sure) >= 0) {
        return List.of(new Violation(loop, SILENT_CALL_WITHIN_LEASE, values
            + ", extension=" + format(extender.extension())
            + ", interval=" + format(extender.interval())
            + " (after a beat the lease is only sure to last " + format(sure) + ")"
            + "; raise the lease extension and visibilityTimeout above "
            + format(call.plus(extender.interval()))
            + " (or lower the interval), or bound the call (client timeout, retries)"));
      }
    } else if (call.compareTo(visibility) >= 0) {
      return List.of(new Violation(loop, SILENT_CALL_WITHIN_VISIBILITY, values
          + " (lease extender disabled); enable the lease extender, or raise visibilityTimeout"
          + " above the whole run"));
    }
    return List.of();
  }

  /** Formats a duration in seconds, for example {@code 720s} or {@code 0.5s}. */
  static String format(Duration d) {
    BigDecimal seconds =
        BigDecimal.valueOf(d.getSeconds()).add(BigDecimal.valueOf(d.getNano(), 9));
    return seconds.stripTrailingZeros().toPlainString() + "s";
  }
}
