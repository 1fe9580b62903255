package dev.tether;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tether.test.SettableTicker;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class HeartbeatTest {
  private final SettableTicker ticker = new SettableTicker();
  private final Heartbeat heartbeat = new Heartbeat(ticker);

  @Test
  void elapsedGrowsWithTimeAndResetsOnBeat() {
    ticker.advance(Duration.ofMillis(150));
    assertThat(heartbeat.elapsed()).isEqualTo(Duration.ofMillis(150));

    heartbeat.beat();
    assertThat(heartbeat.elapsed()).isZero();

    ticker.advance(Duration.ofSeconds(3));
    assertThat(heartbeat.elapsed()).isEqualTo(Duration.ofSeconds(3));
  }

  @Test
  void elapsedOnTheSystemTickerIsFreshAfterABeat() {
    Heartbeat real = new Heartbeat();
    real.beat();
    assertThat(real.elapsed()).isLessThan(Duration.ofMillis(50));
  }

  @Test
  void beatsCloserThanTheResolutionMayBeMergedButNeverLoseMoreThanOneStep() {
    heartbeat.beat();
    ticker.advance(Duration.ofNanos(Heartbeat.RESOLUTION.toNanos() / 2));
    heartbeat.beat();
    assertThat(heartbeat.elapsed()).isLessThanOrEqualTo(Heartbeat.RESOLUTION);
    ticker.advance(Heartbeat.RESOLUTION);
    heartbeat.beat();
    assertThat(heartbeat.elapsed()).isZero();
  }

  @Test
  void everyCallbackRunsOnEachBeatInRegistrationOrder() {
    List<String> calls = new ArrayList<>();
    heartbeat.addCallback(() -> calls.add("a"));
    heartbeat.addCallback(() -> calls.add("b"));

    heartbeat.beat();
    heartbeat.beat();

    assertThat(calls).containsExactly("a", "b", "a", "b");
  }

  @Test
  void aThrowingCallbackIsIsolatedFromTheOthersAndFromTheBeatingThread() {
    List<String> calls = new ArrayList<>();
    heartbeat.addCallback(() -> calls.add("before"));
    heartbeat.addCallback(
        () -> {
          throw new IllegalStateException("callback bug");
        });
    heartbeat.addCallback(() -> calls.add("after"));

    heartbeat.beat(); // must not throw

    assertThat(calls).containsExactly("before", "after");
    assertThat(heartbeat.elapsed()).isZero();
  }

  @Test
  void registrationHandleRemovesExactlyItsOwnCallback() {
    List<String> calls = new ArrayList<>();
    Runnable shared = () -> calls.add("shared");
    Heartbeat.Registration first = heartbeat.addCallback(shared);
    Heartbeat.Registration second = heartbeat.addCallback(shared);
    heartbeat.addCallback(() -> calls.add("other"));

    first.close();
    heartbeat.beat();
    assertThat(calls).containsExactly("shared", "other");
    assertThat(first.isActive()).isFalse();
    assertThat(second.isActive()).isTrue();

    first.close(); // idempotent: must not remove the second registration
    calls.clear();
    heartbeat.beat();
    assertThat(calls).containsExactly("shared", "other");
  }

  @Test
  void removeCallbackRemovesTheEarliestRegistrationOfThatCallback() {
    List<String> calls = new ArrayList<>();
    Runnable a = () -> calls.add("a");
    heartbeat.addCallback(a);
    heartbeat.addCallback(() -> calls.add("b"));
    heartbeat.addCallback(a);

    assertThat(heartbeat.removeCallback(a)).isTrue();
    heartbeat.beat();
    assertThat(calls).containsExactly("b", "a");

    assertThat(heartbeat.removeCallback(a)).isTrue();
    assertThat(heartbeat.removeCallback(a)).isFalse();
    assertThat(heartbeat.callbackCount()).isEqualTo(1);
  }

  @Test
  void callbacksRunOutsideAnyLockSoTheyMayAddAndRemoveCallbacks() throws Exception {
    List<String> calls = new CopyOnWriteArrayList<>();
    Runnable late = () -> calls.add("late");
    heartbeat.addCallback(
        () -> {
          // Another thread registering while we run would deadlock if beat() held a lock.
          Thread t = new Thread(() -> heartbeat.addCallback(late));
          t.start();
          try {
            t.join(5_000);
            assertThat(t.isAlive()).isFalse();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          calls.add("first");
        });

    heartbeat.beat();
    assertThat(calls).containsExactly("first"); // added during the beat: from the next beat on
    heartbeat.removeCallback(late);
    heartbeat.beat();
    assertThat(calls).containsExactly("first", "first");
  }

  @Test
  void manyThreadsBeatingOneHeartbeatRunEveryCallbackForEveryBeat() throws Exception {
    java.util.concurrent.atomic.LongAdder count = new java.util.concurrent.atomic.LongAdder();
    Heartbeat shared = new Heartbeat();
    shared.addCallback(count::increment);
    int threads = 4;
    int beats = 10_000;
    CountDownLatch done = new CountDownLatch(threads);
    for (int t = 0; t < threads; t++) {
      new Thread(
              () -> {
                for (int i = 0; i < beats; i++) {
                  shared.beat();
                }
                done.countDown();
              })
          .start();
    }
    assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
    assertThat(count.sum()).isEqualTo((long) threads * beats);
  }

  @Test
  void beatWithNothingDueAllocatesNothing() {
    var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    LeaseExtender extender =
        new LeaseExtender(LeaseExtenderConfig.of(Duration.ofHours(1), Duration.ofHours(2)));
    Heartbeat real = new Heartbeat();
    try (var attached = extender.attach(new RecordingMessage(), real)) {
      for (int i = 0; i < 200_000; i++) { // warm up to compiled code
        real.beat();
      }
      long id = Thread.currentThread().getId();
      long before = threads.getThreadAllocatedBytes(id);
      for (int i = 0; i < 1_000_000; i++) {
        real.beat();
      }
      long allocated = threads.getThreadAllocatedBytes(id) - before;
      // a million beats; anything per beat would be >= 16 MB
      assertThat(allocated).isLessThan(64 * 1024);
      assertThat(attached.extensions()).isZero();
    }
  }

  @Test
  void nullCallbackIsRejected() {
    assertThatThrownBy(() -> heartbeat.addCallback(null)).isInstanceOf(NullPointerException.class);
  }
}
