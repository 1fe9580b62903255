package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The caller-led groups both group commits run on: who leads, what shares a group, when a second
 * group starts beside one in flight, and that a failing group neither strands its callers nor the
 * queue. A gate holds chosen groups in flight, so that the tests wait for conditions, not time.
 */
class CallerLedGroupsTest {
  private static final Duration WAIT = Duration.ofSeconds(30);

  /** A member named for the assertions; {@code ran} is set by the runner. */
  static final class Job extends CallerLedGroups.Member {
    final String name;
    volatile boolean ran;

    Job(String name) {
      this.name = name;
    }

    Job(String name, boolean waited) {
      super(waited);
      this.name = name;
    }
  }

  /** Records each group's names; holds a group containing {@link #held} until the gate opens. */
  private final List<Set<String>> groups = new CopyOnWriteArrayList<>();
  private final CountDownLatch gate = new CountDownLatch(1);
  private volatile String held = "";
  private volatile String boom = "";
  private final ExecutorService pool = Executors.newCachedThreadPool();

  @AfterEach
  void tearDown() {
    gate.countDown();
    pool.shutdownNow();
  }

  private CallerLedGroups<Job> groups(int parallel, int minParallel) {
    return groups(parallel, minParallel, 256);
  }

  private CallerLedGroups<Job> groups(int parallel, int minParallel, int maxMembers) {
    return new CallerLedGroups<>(parallel, minParallel, maxMembers, j -> 0, 1, members -> {
      Set<String> names = new HashSet<>();
      for (Job j : members) {
        names.add(j.name);
      }
      groups.add(names);
      if (names.contains(held)) {
        try {
          gate.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      if (names.contains(boom)) {
        throw new IllegalStateException("group with " + boom + " failed");
      }
      for (Job j : members) {
        j.ran = true;
      }
    });
  }

  private Future<Job> runAsync(CallerLedGroups<Job> g, String name) {
    return pool.submit(() -> {
      Job j = new Job(name);
      g.run(List.of(j));
      return j;
    });
  }

  @Test
  void aLoneCallerRunsItsGroupAtOnceAndAlone() {
    CallerLedGroups<Job> g = groups(1, 1);
    Job a = new Job("a");
    g.run(List.of(a));
    assertThat(a.isDone()).isTrue();
    assertThat(a.ran).isTrue();
    assertThat(groups).containsExactly(Set.of("a"));
  }

  @Test
  void callersArrivingWhileAGroupIsInFlightShareTheNextGroup() throws Exception {
    CallerLedGroups<Job> g = groups(1, 1);
    held = "a";
    Future<Job> a = runAsync(g, "a");
    await().atMost(WAIT).until(() -> groups.size() == 1);
    List<Future<Job>> later = new ArrayList<>();
    for (String name : List.of("b", "c", "d", "e")) {
      later.add(runAsync(g, name));
    }
    await().atMost(WAIT).until(() -> g.queued() == 4);
    gate.countDown();
    assertThat(a.get(30, TimeUnit.SECONDS).ran).isTrue();
    for (Future<Job> f : later) {
      Job j = f.get(30, TimeUnit.SECONDS);
      assertThat(j.isDone()).isTrue();
      assertThat(j.ran).isTrue();
    }
    // none of the four ran while a's group was in flight, and then all four ran as one group
    assertThat(groups).containsExactly(Set.of("a"), Set.of("b", "c", "d", "e"));
  }

  @Test
  void aSecondGroupStartsBesideOneInFlightOnlyOnceEnoughMembersAreQueued() throws Exception {
    CallerLedGroups<Job> g = groups(2, 3);
    held = "a";
    Future<Job> a = runAsync(g, "a");
    await().atMost(WAIT).until(() -> groups.size() == 1);
    Future<Job> b = runAsync(g, "b");
    await().atMost(WAIT).until(() -> g.queued() == 1);
    Future<Job> c = runAsync(g, "c");
    await().atMost(WAIT).until(() -> g.queued() == 2);
    Future<Job> d = runAsync(g, "d");
    // the third queued member's caller leads a second group while a's is still held
    assertThat(d.get(30, TimeUnit.SECONDS).ran).isTrue();
    assertThat(b.get(30, TimeUnit.SECONDS).ran).isTrue();
    assertThat(c.get(30, TimeUnit.SECONDS).ran).isTrue();
    assertThat(a.isDone()).isFalse();
    // b and c did not run alone beside a: they waited for the group of three
    assertThat(groups).containsExactly(Set.of("a"), Set.of("b", "c", "d"));
    gate.countDown();
    assertThat(a.get(30, TimeUnit.SECONDS).ran).isTrue();
  }

  @Test
  void aMemberNobodyWaitsForRidesInTheNextGroupAndCanBeAdopted() {
    CallerLedGroups<Job> g = groups(1, 1);
    Job deferred = new Job("x", false);
    g.queue(deferred);
    assertThat(deferred.isDone()).isFalse();
    g.run(List.of(new Job("a")));
    assertThat(deferred.isDone()).isTrue();
    assertThat(groups).containsExactly(Set.of("x", "a"));

    Job later = new Job("y", false);
    g.queue(later);
    later.adopt();
    g.awaitDone(List.of(later));
    assertThat(later.ran).isTrue();
    assertThat(groups).containsExactly(Set.of("x", "a"), Set.of("y"));
  }

  @Test
  void aFailingGroupFinishesItsMembersAndTheNextQueuedCallerLeads() throws Exception {
    CallerLedGroups<Job> g = groups(1, 1);
    held = "a";
    boom = "a";
    Future<Job> a = runAsync(g, "a");
    await().atMost(WAIT).until(() -> groups.size() == 1);
    Future<Job> b = runAsync(g, "b");
    await().atMost(WAIT).until(() -> g.queued() == 1);
    gate.countDown();
    assertThatThrownBy(() -> a.get(30, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
        .hasRootCauseMessage("group with a failed");
    // the leader's failure handed off: b's caller led its own group
    Job jb = b.get(30, TimeUnit.SECONDS);
    assertThat(jb.ran).isTrue();
    assertThat(groups).containsExactly(Set.of("a"), Set.of("b"));
  }

  @Test
  void aLeaderWhoseGroupFailsLeavesNoCallerWaitingBehindItsOwnQueuedMembers() throws Exception {
    // one member a group: the leader's second member is still queued when its first group fails
    CallerLedGroups<Job> g = groups(1, 1, 1);
    held = "a1";
    boom = "a1";
    Future<?> a = pool.submit(() -> {
      g.run(List.of(new Job("a1"), new Job("a2")));
      return null;
    });
    await().atMost(WAIT).until(() -> groups.size() == 1);
    AtomicReference<Thread> waiter = new AtomicReference<>();
    Future<Job> b = pool.submit(() -> {
      waiter.set(Thread.currentThread());
      Job j = new Job("b");
      g.run(List.of(j));
      return j;
    });
    // b's caller parked behind the leader, to be handed the lead when it steps down
    await().atMost(WAIT).until(() -> waiter.get() != null
        && java.util.concurrent.locks.LockSupport.getBlocker(waiter.get()) == g);
    gate.countDown();
    assertThatThrownBy(() -> a.get(30, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
        .hasRootCauseMessage("group with a1 failed");
    // the hand-off went to b's caller, not to a2's (the leader that left with the failure): b
    // leads, and a2, which nobody waits for now, runs in a group of its own
    Job jb = b.get(30, TimeUnit.SECONDS);
    assertThat(jb.ran).isTrue();
    assertThat(g.queued()).isZero();
    assertThat(groups).containsExactly(Set.of("a1"), Set.of("a2"), Set.of("b"));
  }

  @Test
  void anInterruptedCallerStillWaitsForItsMemberAndKeepsTheInterrupt() throws Exception {
    CallerLedGroups<Job> g = groups(1, 1);
    held = "a";
    Future<Job> a = runAsync(g, "a");
    await().atMost(WAIT).until(() -> groups.size() == 1);
    AtomicReference<Thread> waiter = new AtomicReference<>();
    Future<Boolean> b = pool.submit(() -> {
      waiter.set(Thread.currentThread());
      Job j = new Job("b");
      g.run(List.of(j));
      return j.ran && Thread.currentThread().isInterrupted();
    });
    await().atMost(WAIT).until(() -> g.queued() == 1);
    waiter.get().interrupt();
    gate.countDown();
    assertThat(b.get(30, TimeUnit.SECONDS)).as("ran, and the interrupt restored").isTrue();
    assertThat(a.get(30, TimeUnit.SECONDS).ran).isTrue();
  }

  @Test
  void aGroupStopsTakingMembersAtTheWeightBound() {
    List<Integer> sizes = new CopyOnWriteArrayList<>();
    CallerLedGroups<Job> g = new CallerLedGroups<>(1, 1, 256, j -> 10, 25, members -> sizes.add(members.size()));
    List<Job> mine = new ArrayList<>();
    for (int i = 0; i < 7; i++) {
      mine.add(new Job("j" + i));
    }
    g.run(mine);
    // weight 10 each, bound 25: a group takes members until it holds 25 or more (three)
    assertThat(sizes).containsExactly(3, 3, 1);
  }

  @Test
  void refusesNonsensicalBounds() {
    assertThatThrownBy(() -> groups(0, 1)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("parallelGroups");
  }
}
