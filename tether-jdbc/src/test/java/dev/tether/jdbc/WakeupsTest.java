package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** How waiting receivers share wake-ups: one per signal per queue, every one on wakeAll. */
class WakeupsTest {
  private static final long LONG = TimeUnit.SECONDS.toNanos(30);
  private final Wakeups wakeups = new Wakeups();
  private final List<Thread> threads = new ArrayList<>();

  @AfterEach
  void stop() throws InterruptedException {
    wakeups.wakeAll();
    for (Thread t : threads) {
      t.join(5_000);
    }
  }

  private void waiters(String queue, int n, AtomicInteger woken) {
    long seen = wakeups.generation();
    for (int i = 0; i < n; i++) {
      Thread t = new Thread(() -> {
        wakeups.await(queue, seen, LONG, LONG);
        woken.incrementAndGet();
      }, "waiter-" + queue + "-" + i);
      threads.add(t);
      t.start();
    }
    await().atMost(Duration.ofSeconds(10)).until(() -> threads.stream()
        .filter(t -> t.getName().startsWith("waiter-" + queue))
        .allMatch(t -> t.getState() == Thread.State.TIMED_WAITING));
  }

  @Test
  void aSignalWakesOneWaiterOfEachQueueNotAll() {
    AtomicInteger a = new AtomicInteger();
    AtomicInteger b = new AtomicInteger();
    waiters("a", 4, a);
    waiters("b", 3, b);

    wakeups.signal();

    await().atMost(Duration.ofSeconds(10)).until(() -> a.get() == 1 && b.get() == 1);
    await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(5))
        .until(() -> a.get() == 1 && b.get() == 1);
    wakeups.signal(); // a second signal (the first receiver took a full batch) wakes the next
    await().atMost(Duration.ofSeconds(10)).until(() -> a.get() == 2 && b.get() == 2);
  }

  @Test
  void wakeAllWakesEveryWaiter() {
    AtomicInteger woken = new AtomicInteger();
    waiters("q", 5, woken);

    wakeups.wakeAll();

    await().atMost(Duration.ofSeconds(10)).until(() -> woken.get() == 5);
  }

  @Test
  void aSignalThatCameBeforeTheWaitIsNotMissed() {
    long seen = wakeups.generation();
    wakeups.signal();
    assertThat(wakeups.await("q", seen, LONG, LONG)).isEqualTo(Wakeups.Wake.SIGNAL); // at once
  }

  @Test
  void aQueueIsPolledAtMostOncePerIntervalHoweverManyReceiversWait() throws InterruptedException {
    long poll = TimeUnit.MILLISECONDS.toNanos(50);
    List<Long> looks = java.util.Collections.synchronizedList(new ArrayList<>());
    long began = System.nanoTime();
    for (int i = 0; i < 4; i++) {
      Thread t = new Thread(() -> {
        while (looks.size() < 8) { // a receiver that looks, finds nothing, and waits again
          if (wakeups.await("q", wakeups.generation(), LONG, poll) != Wakeups.Wake.LOOK) {
            return;
          }
          looks.add(System.nanoTime());
        }
      }, "receiver-" + i);
      threads.add(t);
      t.start();
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> looks.size() >= 8);
    List<Long> sorted;
    synchronized (looks) {
      sorted = new ArrayList<>(looks);
    }
    sorted.sort(null);
    // The queue's first look is due a poll interval after it is first waited on, and each look
    // puts the next one a poll interval later, however many receivers wait: the eighth look comes
    // eight intervals after the start at the earliest. A lower bound on the total only: a thread
    // may record its look late (a slow machine), which can bring two recorded looks closer than
    // an interval, never the eighth sooner. Four receivers polling each on its own would look
    // about eight times in the first two intervals.
    assertThat(TimeUnit.NANOSECONDS.toMillis(sorted.get(7) - began))
        .as("time from the start to the eighth look (ms); looks at (ms) %s",
            sorted.stream().map(t -> TimeUnit.NANOSECONDS.toMillis(t - began)).toList())
        .isGreaterThanOrEqualTo(8 * 50L);
  }

  @Test
  void aReceiveRightAfterAnEmptyLookSkipsItsOwnUntilASignalOrTheNextLookIsDue() {
    long seen = wakeups.generation();
    wakeups.lookedEmpty("q", seen, System.nanoTime() + LONG);
    assertThat(wakeups.start("q", wakeups.generation(), LONG)).isEqualTo(Wakeups.Start.WAIT);
    assertThat(wakeups.start("other", wakeups.generation(), LONG)).isEqualTo(Wakeups.Start.LOOK);

    wakeups.signal(); // something new: look
    assertThat(wakeups.start("q", wakeups.generation(), LONG)).isEqualTo(Wakeups.Start.LOOK);

    wakeups.lookedEmpty("q", wakeups.generation(), System.nanoTime() - 1); // next look already due
    assertThat(wakeups.start("q", wakeups.generation(), LONG)).as("the first takes it")
        .isEqualTo(Wakeups.Start.DUE);
    assertThat(wakeups.start("q", wakeups.generation(), LONG)).as("the others wait")
        .isEqualTo(Wakeups.Start.WAIT);
  }

  @Test
  void aLookThatFoundNothingBeganBeforeASignalDoesNotLetTheNextReceiveSkip() {
    long seen = wakeups.generation();
    wakeups.signal(); // came while the look ran
    wakeups.lookedEmpty("q", seen, System.nanoTime() + LONG);
    assertThat(wakeups.start("q", wakeups.generation(), LONG)).isEqualTo(Wakeups.Start.LOOK);
  }

  @Test
  void thePollerLooksWhenTheQueueComesDueNotAtItsPollInterval() {
    AtomicInteger looked = new AtomicInteger();
    Thread t = new Thread(() -> {
      if (wakeups.await("q", wakeups.generation(), LONG, LONG) == Wakeups.Wake.LOOK) {
        looked.incrementAndGet();
      }
    }, "poller");
    // the queue was just looked at: next look a poll interval (30 s) ahead
    wakeups.lookedEmpty("q", wakeups.generation(), System.nanoTime() + LONG);
    threads.add(t);
    t.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> t.getState() == Thread.State.TIMED_WAITING);

    // a probe learnt that a delayed item comes due in 20 ms
    wakeups.lookedEmpty("q", wakeups.generation(), System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(20));

    await().atMost(Duration.ofSeconds(10)).until(() -> looked.get() == 1);
  }

  @Test
  void theQueuesWaitedOnAreThoseWithWaitersAndThoseWaitedOnRecently() {
    AtomicInteger woken = new AtomicInteger();
    waiters("a", 1, woken);
    assertThat(wakeups.waitedOn(0)).containsExactly("a");
    assertThat(wakeups.hasWaiting("a")).isTrue();
    assertThat(wakeups.hasWaiting("b")).isFalse();
    assertThat(wakeups.hasWaiting(null)).isTrue();

    wakeups.wakeAll();
    await().atMost(Duration.ofSeconds(10)).until(() -> woken.get() == 1);
    assertThat(wakeups.hasWaiting("a")).isFalse();
    assertThat(wakeups.waitedOn(LONG)).containsExactly("a"); // within the keep time
    assertThat(wakeups.waitedOn(0)).isEmpty();
  }
}
