package dev.tether.cli.internal;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/** Counters of one worker process, for {@code /metrics}. Thread-safe, lock-free. */
public final class WorkerMetrics implements WorkerEvents {
  /** Leases extended. */
  public final LongAdder leasesExtended = new LongAdder();
  /** Extensions that failed for reasons other than a lost lease. */
  public final LongAdder extensionFailures = new LongAdder();
  /** Leases lost. */
  public final LongAdder leasesLost = new LongAdder();
  /** Commands that exited 0. */
  public final LongAdder succeeded = new LongAdder();
  /** Commands that failed. */
  public final LongAdder failed = new LongAdder();
  /** Items handed back on shutdown. */
  public final LongAdder handedBack = new LongAdder();
  /** Output chunks read (beats). */
  public final LongAdder chunks = new LongAdder();
  /** Sum of handler durations, in milliseconds. */
  public final LongAdder handlerMillis = new LongAdder();
  /** Handler runs. */
  public final LongAdder handlerRuns = new LongAdder();
  /** Longest handler duration, in milliseconds. */
  public final AtomicLong handlerMaxMillis = new AtomicLong();

  @Override
  public void extended(String itemId, Duration extension) {
    leasesExtended.increment();
  }

  @Override
  public void leaseLost(String itemId) {
    leasesLost.increment();
  }

  @Override
  public void finished(String itemId, int delivery, CommandResult result, Duration took) {
    if (result.succeeded()) {
      succeeded.increment();
    } else {
      failed.increment();
    }
    chunks.add(result.chunks());
    handlerRuns.increment();
    handlerMillis.add(took.toMillis());
    handlerMaxMillis.accumulateAndGet(took.toMillis(), Math::max);
  }

  @Override
  public void handedBack(String itemId) {
    handedBack.increment();
  }
}
