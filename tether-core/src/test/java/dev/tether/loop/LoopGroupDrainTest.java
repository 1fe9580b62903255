package dev.tether.loop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.LeaseExtender;
import dev.tether.LeaseExtenderConfig;
import dev.tether.health.Watchdog;
import dev.tether.mailbox.InMemoryMailbox;
import dev.tether.mailbox.Message;
import dev.tether.test.SettableClock;
import dev.tether.test.SettableTicker;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A group's drain: on a shutdown request the loops take no new work, running handlers keep
 * beating and extending their leases until they finish or the drain timeout ends (one instant for
 * the whole group), and what still runs then is asked to stop and handed back, not charged, with
 * its latest checkpoint.
 */
@Timeout(60)
class LoopGroupDrainTest {
  private static final HttpClient client =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private final List<LoopGroup> groups = new ArrayList<>();
  private final List<InMemoryMailbox<?, ?>> mailboxes = new ArrayList<>();
  private final List<Watchdog.Stall> terminations = new CopyOnWriteArrayList<>();

  @AfterEach
  void tearDown() {
    for (LoopGroup g : groups) {
      g.shutdownNow();
      g.awaitTermination(Duration.ofSeconds(10));
    }
    mailboxes.forEach(InMemoryMailbox::close);
  }

  private <T, R> InMemoryMailbox<T, R> track(InMemoryMailbox<T, R> m) {
    mailboxes.add(m);
    return m;
  }

  private LoopGroup.Builder builder() {
    return LoopGroup.builder()
        .handleSignals(false)
        .terminator((status, stalls) -> terminations.addAll(stalls));
  }

  private CompletableFuture<Void> runInBackground(LoopGroup group) {
    groups.add(group);
    CompletableFuture<Void> done = new CompletableFuture<>();
    Thread t = new Thread(() -> {
      try {
        group.run();
        done.complete(null);
      } catch (Throwable e) {
        done.completeExceptionally(e);
      }
    }, "test-group-runner");
    t.setDaemon(true);
    t.start();
    return done;
  }

  private static int status(LoopGroup group, String path) throws Exception {
    int port = group.healthAddress().orElseThrow().getPort();
    HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(5)).build();
    return client.send(request, HttpResponse.BodyHandlers.ofString()).statusCode();
  }

  /** A short long-poll, so an idle loop notices a drain quickly even without the wake-up. */
  private static MainLoopConfig.Builder config() {
    return MainLoopConfig.builder()
        .visibilityTimeout(Duration.ofSeconds(20))
        .leaseExtender(LeaseExtenderConfig.of(Duration.ofSeconds(1), Duration.ofSeconds(10)))
        .waitTime(Duration.ofMillis(200));
  }

  @Test
  void aDrainLetsTheRunningHandlerFinishExtendingItsLeaseWhileReadinessFailsAndLivenessHolds()
      throws Exception {
    SettableClock clock = new SettableClock();
    SettableTicker ticker = new SettableTicker();
    InMemoryMailbox<String, String> requests =
        track(InMemoryMailbox.<String, String>builder("requests").clock(clock).build());
    String id = requests.send("long job");
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicBoolean sawStop = new AtomicBoolean();
    AtomicInteger extensions = new AtomicInteger();
    MainLoop<String, String> loop = MainLoop.builder("drainer", requests, (String body, WorkContext ctx) -> {
          started.countDown();
          while (!release.await(5, TimeUnit.MILLISECONDS)) {
            ctx.beat(); // progress
            if (ctx.shouldStop()) {
              sawStop.set(true);
            }
          }
          return "done";
        })
        .config(config().build())
        .ticker(ticker)
        .extenderListener(new LeaseExtender.Listener() {
          @Override
          public void extended(Message<?, ?> message, Duration extension) {
            extensions.incrementAndGet();
          }
        })
        .build();
    LoopGroup group = builder().loop(loop).noWatchdog().healthPort(0)
        .drainTimeout(Duration.ofSeconds(30)).shutdownTimeout(Duration.ofSeconds(40)).build();
    CompletableFuture<Void> run = runInBackground(group);
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
    await().atMost(Duration.ofSeconds(10)).until(() -> group.healthAddress().isPresent());
    assertThat(status(group, "/health/ready")).isEqualTo(200);

    group.shutdown();

    assertThat(status(group, "/health/ready")).as("readiness fails as the drain starts").isEqualTo(503);
    assertThat(status(group, "/health/live")).as("liveness holds during the drain").isEqualTo(200);
    // three visibility timeouts pass on the mailbox's clock while the handler beats
    for (int i = 1; i <= 30; i++) {
      clock.advance(Duration.ofSeconds(2));
      ticker.advance(Duration.ofSeconds(2));
      int target = i;
      await().atMost(Duration.ofSeconds(10)).until(() -> extensions.get() >= target);
    }
    assertThat(requests.receive(1, Duration.ofSeconds(10), Duration.ZERO))
        .as("the lease was kept for 60 s (visibility 20 s): nobody else can take the message")
        .isEmpty();
    assertThat(run).isNotDone();

    release.countDown();
    run.get(10, TimeUnit.SECONDS);

    assertThat(sawStop).as("a draining handler is not asked to stop").isFalse();
    assertThat(requests.approximateCount()).as("completed and acknowledged").isZero();
    assertThat(requests.receive(1, Duration.ofSeconds(10), Duration.ZERO)).isEmpty();
    assertThat(id).isNotNull();
  }

  @Test
  void handlersStillRunningWhenTheDrainEndsAreHandedBackUnchargedWithTheirCheckpointAllAtOneDeadline()
      throws Exception {
    InMemoryMailbox<String, String> requests =
        track(InMemoryMailbox.<String, String>builder("requests").build());
    for (int i = 0; i < 3; i++) {
      requests.send("job " + i);
    }
    CountDownLatch started = new CountDownLatch(3);
    List<String> stoppedBy = new CopyOnWriteArrayList<>();
    Handler<String, String> handler = (body, ctx) -> {
      ctx.checkpoint("step-1 of " + body);
      started.countDown();
      CountDownLatch never = new CountDownLatch(1);
      while (!ctx.shouldStop()) {
        ctx.beat();
        never.await(10, TimeUnit.MILLISECONDS);
      }
      stoppedBy.add(body);
      throw new WorkStoppedException(WorkStoppedException.Reason.SHUTDOWN, "stopping " + body);
    };
    List<MainLoop<String, String>> loops = new ArrayList<>();
    for (int i = 1; i <= 3; i++) {
      loops.add(MainLoop.builder("w" + i, requests, handler).config(config().maxMessages(1).build()).build());
    }
    Duration drain = Duration.ofSeconds(2);
    LoopGroup group = builder().loops(loops).noWatchdog()
        .drainTimeout(drain).shutdownTimeout(Duration.ofSeconds(20)).build();
    CompletableFuture<Void> run = runInBackground(group);
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();

    long t0 = System.nanoTime();
    group.shutdown();
    run.get(20, TimeUnit.SECONDS);
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);

    assertThat(stoppedBy).hasSize(3);
    assertThat(tookMs).as("the drain is honoured").isGreaterThanOrEqualTo(drain.toMillis());
    assertThat(tookMs).as("one drain deadline for the group, not one per loop (3 x %s)", drain)
        .isLessThan(drain.multipliedBy(3).toMillis());
    List<Message<String, String>> again = requests.receive(10, Duration.ofSeconds(30), Duration.ZERO);
    assertThat(again).hasSize(3);
    for (Message<String, String> m : again) {
      assertThat(m.deliveryCount()).isEqualTo(2);
      assertThat(m.attempt()).as("the hand-back was not charged").isEqualTo(1);
      assertThat(m.lastCheckpoint()).map(b -> new String(b, java.nio.charset.StandardCharsets.UTF_8))
          .contains("step-1 of " + m.body());
    }
  }

  @Test
  void shutdownNowEndsTheDrainAtOnce() throws Exception {
    InMemoryMailbox<String, String> requests =
        track(InMemoryMailbox.<String, String>builder("requests").build());
    requests.send("job");
    CountDownLatch started = new CountDownLatch(1);
    MainLoop<String, String> loop = MainLoop.builder("w1", requests, (String body, WorkContext ctx) -> {
          started.countDown();
          CountDownLatch never = new CountDownLatch(1);
          while (!ctx.isShutdownRequested()) {
            ctx.beat();
            never.await(10, TimeUnit.MILLISECONDS);
          }
          throw new WorkStoppedException(WorkStoppedException.Reason.SHUTDOWN, "stopping");
        })
        .config(config().build()).build();
    LoopGroup group = builder().loop(loop).noWatchdog()
        .drainTimeout(Duration.ofMinutes(10)).shutdownTimeout(Duration.ofMinutes(11)).build();
    CompletableFuture<Void> run = runInBackground(group);
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
    group.shutdown();
    assertThat(run).isNotDone();

    group.shutdownNow();

    run.get(20, TimeUnit.SECONDS); // far less than the 10-minute drain
    List<Message<String, String>> again = requests.receive(1, Duration.ofSeconds(30), Duration.ZERO);
    assertThat(again).hasSize(1);
    assertThat(again.get(0).attempt()).isEqualTo(1);
  }

  @Test
  void aHandlerInterruptedAtTheGroupsDeadlineIsHandedBackNotCharged() throws Exception {
    InMemoryMailbox<String, String> requests =
        track(InMemoryMailbox.<String, String>builder("requests").build());
    requests.send("job");
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch ended = new CountDownLatch(1);
    MainLoop<String, String> loop = MainLoop.builder("w1", requests, (String body, WorkContext ctx) -> {
          started.countDown();
          try {
            new CountDownLatch(1).await(); // ignores every stop request; only an interrupt ends it
          } finally {
            ended.countDown();
          }
          return "never";
        })
        .config(config().build()).build();
    LoopGroup group = builder().loop(loop).noWatchdog()
        .drainTimeout(Duration.ofMillis(200)).shutdownTimeout(Duration.ofMillis(700)).build();
    CompletableFuture<Void> run = runInBackground(group);
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();

    group.shutdown();
    run.get(10, TimeUnit.SECONDS);
    assertThat(ended.await(10, TimeUnit.SECONDS)).isTrue();

    List<Message<String, String>> again = await().atMost(Duration.ofSeconds(10)).until(
        () -> requests.receive(1, Duration.ofSeconds(30), Duration.ZERO), l -> !l.isEmpty());
    assertThat(again.get(0).deliveryCount()).isEqualTo(2);
    assertThat(again.get(0).attempt()).as("an interruption by the shutdown is not charged").isEqualTo(1);
  }

  @Test
  void aLoopThatEndedDuringTheDrainIsNotTakenForAStalledOne() throws Exception {
    InMemoryMailbox<String, String> idleBox =
        track(InMemoryMailbox.<String, String>builder("idle").build());
    InMemoryMailbox<String, String> busyBox =
        track(InMemoryMailbox.<String, String>builder("busy").build());
    busyBox.send("job");
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    MainLoop<String, String> idle = MainLoop.builder("idle", idleBox, (String b, WorkContext c) -> b)
        .config(config().build()).build();
    MainLoop<String, String> busy = MainLoop.builder("busy", busyBox, (String body, WorkContext ctx) -> {
          started.countDown();
          while (!release.await(20, TimeUnit.MILLISECONDS)) {
            ctx.beat();
          }
          return "done";
        })
        .config(config().build()).build();
    Duration threshold = Duration.ofSeconds(2); // the busy loop beats every 20 ms: far below it
    LoopGroup group = builder().loop(idle).loop(busy)
        .watchdogThreshold(threshold).watchdogInterval(Duration.ofMillis(200))
        .calibration(Calibration.Mode.OFF)
        .drainTimeout(Duration.ofSeconds(30)).shutdownTimeout(Duration.ofSeconds(40)).build();
    CompletableFuture<Void> run = runInBackground(group);
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();

    group.shutdown();
    await().atMost(Duration.ofSeconds(10)).until(() -> !idle.isRunning());
    // the idle loop's heartbeat grows older than the threshold while the busy one drains
    await().during(threshold.multipliedBy(2).plusMillis(500)).atMost(threshold.multipliedBy(5))
        .until(terminations::isEmpty);
    assertThat(idle.heartbeat().elapsed()).isGreaterThan(threshold);

    release.countDown();
    run.get(10, TimeUnit.SECONDS);
    assertThat(terminations).isEmpty();
    assertThat(busyBox.approximateCount()).isZero();
  }
}
