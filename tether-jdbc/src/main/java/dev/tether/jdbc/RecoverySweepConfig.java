package dev.tether.jdbc;

import java.time.Clock;
import java.time.Duration;
import java.util.Objects;

/**
 * Immutable options of a {@link RecoverySweep}. Build with {@link #builder()}; every setter
 * validates its value at once.
 */
public final class RecoverySweepConfig {
  /** Default pause between background passes: 60 s. */
  public static final Duration DEFAULT_SCAN_INTERVAL = Duration.ofSeconds(60);
  /** Default number of expired leases reclaimed per transaction. */
  public static final int DEFAULT_BATCH_SIZE = 500;
  /** Default number of checkpoints kept per item: 100. */
  public static final int DEFAULT_CHECKPOINTS_PER_ITEM = 100;
  /** Default pause between retention cleanups. */
  public static final Duration DEFAULT_CLEANUP_INTERVAL = Duration.ofHours(1);

  private final Clock clock;
  private final Duration scanInterval;
  private final int batchSize;
  private final boolean cleanupEnabled;
  private final int checkpointsPerItem;
  private final Duration checkpointMaxAge;
  private final Duration finishedItemMaxAge;
  private final Duration cleanupInterval;

  private RecoverySweepConfig(Builder b) {
    this.clock = b.clock;
    this.scanInterval = b.scanInterval;
    this.batchSize = b.batchSize;
    this.cleanupEnabled = b.cleanupEnabled;
    this.checkpointsPerItem = b.checkpointsPerItem;
    this.checkpointMaxAge = b.checkpointMaxAge;
    this.finishedItemMaxAge = b.finishedItemMaxAge;
    this.cleanupInterval = b.cleanupInterval;
  }

  /**
   * Returns the defaults.
   *
   * @return the defaults
   */
  public static RecoverySweepConfig defaults() {
    return builder().build();
  }

  /**
   * Returns a builder holding the defaults: store clock, 60 s interval, batches of 500, cleanup on
   * (100 checkpoints per item, no age limit on checkpoints, finished items kept forever) at most
   * hourly.
   *
   * @return the builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /** @return the clock, or null for the store's */
  public Clock clock() {
    return clock;
  }

  /** @return the pause between background passes */
  public Duration scanInterval() {
    return scanInterval;
  }

  /** @return expired leases reclaimed per transaction */
  public int batchSize() {
    return batchSize;
  }

  /** @return whether passes also run retention cleanup when it is due */
  public boolean cleanupEnabled() {
    return cleanupEnabled;
  }

  /** @return checkpoints kept per item */
  public int checkpointsPerItem() {
    return checkpointsPerItem;
  }

  /** @return the age past which checkpoints are deleted, or null to keep them */
  public Duration checkpointMaxAge() {
    return checkpointMaxAge;
  }

  /** @return the age past which completed/failed items are deleted, or null to keep them */
  public Duration finishedItemMaxAge() {
    return finishedItemMaxAge;
  }

  /** @return the pause between cleanups run by passes */
  public Duration cleanupInterval() {
    return cleanupInterval;
  }

  @Override
  public String toString() {
    return "RecoverySweepConfig[scanInterval=" + dev.tether.DurationText.of(scanInterval) + ", batchSize=" + batchSize
        + ", cleanup=" + cleanupEnabled + ", checkpointsPerItem=" + checkpointsPerItem
        + ", checkpointMaxAge=" + dev.tether.DurationText.of(checkpointMaxAge) + ", finishedItemMaxAge="
        + dev.tether.DurationText.of(finishedItemMaxAge) + ", cleanupInterval=" + dev.tether.DurationText.of(cleanupInterval) + "]";
  }

  /** Builds a {@link RecoverySweepConfig}. Not thread-safe. */
  public static final class Builder {
    private Clock clock;
    private Duration scanInterval = DEFAULT_SCAN_INTERVAL;
    private int batchSize = DEFAULT_BATCH_SIZE;
    private boolean cleanupEnabled = true;
    private int checkpointsPerItem = DEFAULT_CHECKPOINTS_PER_ITEM;
    private Duration checkpointMaxAge;
    private Duration finishedItemMaxAge;
    private Duration cleanupInterval = DEFAULT_CLEANUP_INTERVAL;

    private Builder() {}

    private static Duration positive(String name, Duration d) {
      Objects.requireNonNull(d, name);
      if (d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(name + " must be positive, was " + d);
      }
      return d;
    }

    /**
     * Sets the clock (tests).
     *
     * @param clock the clock
     * @return this builder
     */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /**
     * Sets the pause between background passes.
     *
     * @param interval positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder scanInterval(Duration interval) {
      this.scanInterval = positive("scanInterval", interval);
      return this;
    }

    /**
     * Sets how many expired leases one transaction reclaims.
     *
     * @param size 1 to 10000
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder batchSize(int size) {
      if (size < 1 || size > 10_000) {
        throw new IllegalArgumentException("batchSize must be in 1..10000, was " + size);
      }
      this.batchSize = size;
      return this;
    }

    /**
     * Turns retention cleanup during passes on or off ({@link RecoverySweep#cleanup()} always
     * runs when called).
     *
     * @param enabled whether passes clean up
     * @return this builder
     */
    public Builder cleanupEnabled(boolean enabled) {
      this.cleanupEnabled = enabled;
      return this;
    }

    /**
     * Sets how many checkpoints to keep per item (the newest).
     *
     * @param limit at least 1
     * @return this builder
     * @throws IllegalArgumentException if less than 1
     */
    public Builder checkpointsPerItem(int limit) {
      if (limit < 1) {
        throw new IllegalArgumentException("checkpointsPerItem must be >= 1, was " + limit);
      }
      this.checkpointsPerItem = limit;
      return this;
    }

    /**
     * Deletes checkpoints older than {@code age}.
     *
     * @param age positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder checkpointMaxAge(Duration age) {
      this.checkpointMaxAge = positive("checkpointMaxAge", age);
      return this;
    }

    /**
     * Deletes completed and failed items (and their checkpoints) finished longer than {@code age}
     * ago.
     *
     * @param age positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder finishedItemMaxAge(Duration age) {
      this.finishedItemMaxAge = positive("finishedItemMaxAge", age);
      return this;
    }

    /**
     * Sets the pause between cleanups run by passes.
     *
     * @param interval positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder cleanupInterval(Duration interval) {
      this.cleanupInterval = positive("cleanupInterval", interval);
      return this;
    }

    /**
     * Builds the configuration.
     *
     * @return the configuration
     */
    public RecoverySweepConfig build() {
      return new RecoverySweepConfig(this);
    }
  }
}
