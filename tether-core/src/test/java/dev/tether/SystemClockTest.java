package dev.tether;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class SystemClockTest {
  private static final Duration PATIENCE = Duration.ofSeconds(10);

  /** A source that moves by a fixed step on every call and counts its calls. */
  private static final class SteppingSource implements java.util.function.LongSupplier {
    final AtomicLong now = new AtomicLong(1_000_000_000L);
    final AtomicLong calls = new AtomicLong();
    volatile long step;

    SteppingSource(long step) {
      this.step = step;
    }

    @Override
    public long getAsLong() {
      calls.incrementAndGet();
      return now.addAndGet(step);
    }
  }

  private final List<Thread> threads = new ArrayList<>();
  private final List<SystemClock> clocks = new ArrayList<>();

  private final ThreadFactory factory =
      r -> {
        Thread t = new Thread(r, "test-clock-" + threads.size());
        t.setDaemon(true);
        threads.add(t);
        return t;
      };

  private SystemClock clock(java.util.function.LongSupplier source, boolean enabled) {
    SystemClock c = new SystemClock(source, SystemClock.TICK_NANOS, factory, enabled);
    clocks.add(c);
    return c;
  }

  @AfterEach
  void stopClocks() {
    clocks.forEach(SystemClock::shutdown);
  }

  private static void readMany(SystemClock clock, int n) {
    for (int i = 0; i < n; i++) {
      clock.read();
    }
  }

  @Test
  void readingsFarApartGoStraightToTheSourceAndStartNoThread() {
    SteppingSource source = new SteppingSource(10_000); // 10 µs between readings
    SystemClock clock = clock(source, true);

    long previous = clock.read();
    for (int i = 0; i < 20_000; i++) {
      long reading = clock.read();
      assertThat(reading - previous).isEqualTo(10_000);
      previous = reading;
    }

    assertThat(clock.hasThread()).isFalse();
    assertThat(clock.isCaching()).isFalse();
    assertThat(source.calls.get()).isEqualTo(20_001);
  }

  @Test
  void aTightLoopIsServedFromTheCacheRefreshedByOneThread() {
    SteppingSource source = new SteppingSource(1); // readings 1 ns apart: a tight loop
    SystemClock clock = clock(source, true);

    readMany(clock, SystemClock.FAST_READS_TO_START + 1);
    assertThat(clock.hasThread()).isTrue();
    await().atMost(PATIENCE).until(() -> { clock.read(); return clock.isCaching(); });

    long callsBefore = source.calls.get();
    long reading = clock.read();
    // Read in a tight loop for a while: a fixed count of reads takes well under a millisecond, so
    // it could fall just when the window that began with the await's sparse readings closes and
    // the cache stops (seen once in a full build); a sustained loop touches every refresh.
    long reads = 0;
    long end = System.nanoTime() + Duration.ofMillis(300).toNanos();
    while (System.nanoTime() < end) {
      readMany(clock, 10_000);
      reads += 10_000;
    }
    // the cached readings cost the source only the refresher's calls (and a restart's): far fewer
    assertThat(source.calls.get() - callsBefore).isLessThan(reads / 10);
    assertThat(reading).isLessThanOrEqualTo(source.now.get());
    assertThat(threads).hasSize(1);
  }

  @Test
  void cachedReadingsLagNanoTimeAndNeverLeadIt() {
    SystemClock clock = clock(System::nanoTime, true);
    await().atMost(PATIENCE).until(() -> { readMany(clock, 10_000); return clock.isCaching(); });

    long maxLag = 0;
    for (int i = 0; i < 200_000; i++) {
      long reading = clock.read();
      long lag = System.nanoTime() - reading;
      assertThat(lag).isGreaterThanOrEqualTo(0);
      maxLag = Math.max(maxLag, lag);
    }
    // a refresh every millisecond; allow a starved thread on a busy 2-core machine
    assertThat(maxLag).isLessThan(Duration.ofSeconds(2).toNanos());
  }

  @Test
  void cachingStopsWhenReadingsStopAndTheSameThreadResumesIt() {
    SteppingSource source = new SteppingSource(1);
    SystemClock clock = clock(source, true);
    await().atMost(PATIENCE).until(() -> { readMany(clock, 2_000); return clock.isCaching(); });

    // no readings: fewer than half of a window's refreshes are read, so the cache stops
    await().atMost(PATIENCE).until(() -> !clock.isCaching());
    Thread refresher = threads.get(0);
    await().atMost(PATIENCE).until(() -> refresher.getState() == Thread.State.WAITING);
    long calls = source.calls.get();
    await().during(Duration.ofMillis(50)).atMost(PATIENCE).until(() -> source.calls.get() == calls);

    await().atMost(PATIENCE).until(() -> { readMany(clock, 2_000); return clock.isCaching(); });
    assertThat(threads).containsExactly(refresher);
  }

  @Test
  void disabledClockNeverCaches() {
    SteppingSource source = new SteppingSource(1);
    SystemClock clock = clock(source, false);

    readMany(clock, 100_000);

    assertThat(clock.hasThread()).isFalse();
    assertThat(source.calls.get()).isEqualTo(100_000);
  }

  @Test
  void aDeadRefresherLeavesReadingsDirect() {
    AtomicLong now = new AtomicLong();
    SystemClock clock =
        clock(
            () -> {
              if (Thread.currentThread().getName().startsWith("test-clock")) {
                throw new IllegalStateException("refresher fails");
              }
              return now.incrementAndGet();
            },
            true);

    readMany(clock, SystemClock.FAST_READS_TO_START + 1);
    Thread refresher = threads.get(0);
    await().atMost(PATIENCE).until(() -> !refresher.isAlive());

    long before = now.get();
    readMany(clock, 10_000);
    assertThat(clock.isCaching()).isFalse();
    assertThat(now.get() - before).isEqualTo(10_000);
    assertThat(threads).hasSize(1); // never restarted
  }

  @Test
  void aThreadFactoryThatFailsLeavesReadingsDirect() {
    SteppingSource source = new SteppingSource(1);
    SystemClock clock =
        new SystemClock(source, SystemClock.TICK_NANOS, r -> null, true);
    clocks.add(clock);

    readMany(clock, 10 * SystemClock.FAST_READS_TO_START);

    assertThat(clock.isCaching()).isFalse();
    assertThat(clock.hasThread()).isFalse();
    assertThat(source.calls.get()).isEqualTo(10L * SystemClock.FAST_READS_TO_START);
  }

  @Test
  void theSystemTickerUsesTheProcessClock() {
    Ticker ticker = Ticker.system();
    long before = System.nanoTime();
    long reading = ticker.read();
    assertThat(reading - before).isGreaterThanOrEqualTo(-Duration.ofSeconds(2).toNanos());
    assertThat(System.nanoTime() - reading).isGreaterThanOrEqualTo(0);
    assertThat(ticker).hasToString("Ticker.system()");
  }
}
