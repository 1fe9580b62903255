package dev.tether.micrometer;

import dev.tether.jdbc.RecoverySweep;
import dev.tether.jdbc.SweepStatistics;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.Objects;
import java.util.function.ToDoubleFunction;

/**
 * Counters of this process's {@link RecoverySweep}: {@value #SCANS} (passes), {@value #RECOVERED}
 * (expired leases put back for redelivery), {@value #FAILED} (expired leases dead-lettered, their
 * budget spent) and {@value #ERRORS} (passes that failed). They read the sweep's own totals, which
 * only grow while the process lives. No tags: one sweep per process. Thread-safe.
 */
public final class RecoverySweepMetrics implements MeterBinder {
  /** Sweep passes (counter). */
  public static final String SCANS = "tether.sweep.scans";
  /** Expired leases the sweep put back for redelivery (counter). */
  public static final String RECOVERED = "tether.sweep.recovered";
  /** Expired leases the sweep dead-lettered because their budget was spent (counter). */
  public static final String FAILED = "tether.sweep.failed";
  /** Sweep passes that failed (counter). */
  public static final String ERRORS = "tether.sweep.errors";

  private final RecoverySweep sweep;

  /**
   * Exports {@code sweep}'s totals.
   *
   * @param sweep the sweep of this process
   */
  public RecoverySweepMetrics(RecoverySweep sweep) {
    this.sweep = Objects.requireNonNull(sweep, "sweep");
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    counter(registry, SCANS, "Recovery sweep passes", SweepStatistics::totalScans);
    counter(registry, RECOVERED, "Expired leases put back for redelivery by the sweep",
        SweepStatistics::totalRecovered);
    counter(registry, FAILED, "Expired leases dead-lettered by the sweep (budget spent)",
        SweepStatistics::totalFailed);
    counter(registry, ERRORS, "Recovery sweep passes that failed", SweepStatistics::totalErrors);
  }

  private void counter(MeterRegistry registry, String name, String description,
      ToDoubleFunction<SweepStatistics> total) {
    FunctionCounter.builder(name, sweep, s -> total.applyAsDouble(s.statistics()))
        .description(description)
        .register(registry);
  }
}
