package dev.tether.loop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.tether.LeaseExtenderConfig;
import dev.tether.health.Watchdog;
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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class LoopGroupTest {
  private static final HttpClient client =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private final List<LoopGroup> groups = new ArrayList<>();
  private final List<Watchdog.Stall> terminations = new CopyOnWriteArrayList<>();
  private final Watchdog.Terminator recordingTerminator = (status, stalls) -> terminations.addAll(stalls);

  @AfterEach
  void tearDown() {
    for (LoopGroup g : groups) {
      g.shutdown(Duration.ofSeconds(5));
    }
  }

  /** A builder for tests: no signal handling, no real halt. */
  private LoopGroup.Builder builder() {
    return LoopGroup.builder().handleSignals(false).terminator(recordingTerminator);
  }

  /** Runs the group on a background thread; the future completes when run() returns. */
  private CompletableFuture<Void> runInBackground(LoopGroup group) {
    groups.add(group);
    CompletableFuture<Void> done = new CompletableFuture<>();
    Thread t =
        new Thread(
            () -> {
              try {
                group.run();
                done.complete(null);
              } catch (Throwable e) {
                done.completeExceptionally(e);
              }
            },
            "test-group-runner");
    t.setDaemon(true);
    t.start();
    return done;
  }

  private static void awaitStarted(FakeLoop... loops) throws InterruptedException {
    for (FakeLoop l : loops) {
      assertThat(l.started.await(5, TimeUnit.SECONDS)).as(l + " started").isTrue();
    }
  }

  private static int status(LoopGroup group, String path) throws Exception {
    int port = group.healthAddress().orElseThrow().getPort();
    HttpRequest request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofSeconds(5))
            .build();
    return client.send(request, HttpResponse.BodyHandlers.ofString()).statusCode();
  }

  @Test
  void runsEveryLoopOnItsOwnNamedThreadUntilShutdown() throws Exception {
    FakeLoop a = new FakeLoop("alpha");
    FakeLoop b = new FakeLoop("beta");
    LoopGroup group = builder().loop(a).loop(b).build();

    CompletableFuture<Void> run = runInBackground(group);
    awaitStarted(a, b);

    assertThat(a.runner.getName()).isEqualTo("tether-loop-alpha");
    assertThat(b.runner.getName()).isEqualTo("tether-loop-beta");
    assertThat(run).isNotDone();

    group.shutdown();
    run.get(5, TimeUnit.SECONDS);
    assertThat(a.isRunning()).isFalse();
    assertThat(b.isRunning()).isFalse();
    assertThat(group.awaitTermination(Duration.ZERO)).isTrue();
  }

  @Test
  void shutdownSignalsEveryLoopAtOnceEvenIfOneIsSlowAndOneThrows() throws Exception {
    FakeLoop slow = new FakeLoop("slow").stopDelay(Duration.ofSeconds(1));
    FakeLoop throwing =
        new FakeLoop("throwing").shutdownFailsWith(new IllegalStateException("shutdown bug"));
    FakeLoop normal = new FakeLoop("normal");
    LoopGroup group =
        builder()
            .loop(slow)
            .loop(throwing)
            .loop(normal)
            .shutdownTimeout(Duration.ofSeconds(3)) // the slow loop's 1 s, with room for a busy machine
            .build();
    CompletableFuture<Void> run = runInBackground(group);
    awaitStarted(slow, throwing, normal);

    group.shutdown();

    assertThat(slow.ended.getCount()).as("shutdown() does not wait for the slow loop").isOne();
    assertThat(slow.signalled.getCount()).isZero();
    assertThat(throwing.shutdownCalls.get()).isEqualTo(1);
    assertThat(normal.signalled.getCount()).as("signalled although an earlier loop threw").isZero();
    assertThat(normal.ended.await(5, TimeUnit.SECONDS)).isTrue();

    run.get(5, TimeUnit.SECONDS);
    assertThat(slow.ended.await(5, TimeUnit.SECONDS)).isTrue();
    assertThat(normal.endedAt)
        .as("the normal loop stops without waiting for the slow one (1 s to stop)")
        .isLessThan(slow.endedAt);
    assertThat(throwing.ended.await(5, TimeUnit.SECONDS)).isTrue();
    assertThat(throwing.interrupted)
        .as("the loop that could not be signalled is interrupted at the deadline")
        .isTrue();
    assertThat(slow.interrupted).as("the slow loop stopped in time").isFalse();
  }

  @Test
  void loopsStopInParallelWithinOneSharedDeadline() throws Exception {
    FakeLoop a = new FakeLoop("a").stopDelay(Duration.ofSeconds(1));
    FakeLoop b = new FakeLoop("b").stopDelay(Duration.ofSeconds(1));
    LoopGroup group = builder().loop(a).loop(b).shutdownTimeout(Duration.ofMillis(1500)).build();
    CompletableFuture<Void> run = runInBackground(group);
    awaitStarted(a, b);

    boolean stopped = group.shutdown(Duration.ofMillis(1500));

    assertThat(stopped).isTrue();
    // Both take 1 s to stop. In parallel, both are asked before either has finished; one after the
    // other, the second would be asked after the first ended (and 2 s would miss the deadline).
    assertThat(Math.max(a.signalledAt, b.signalledAt))
        .as("both asked to stop before either ended")
        .isLessThan(Math.min(a.endedAt, b.endedAt));
    assertThat(a.interrupted || b.interrupted).isFalse();
    run.get(5, TimeUnit.SECONDS); // run() has returned (its caller may not have seen it yet)
  }

  @Test
  void loopsStillRunningAtTheSharedDeadlineAreInterruptedAndRunReturns() throws Exception {
    FakeLoop a = new FakeLoop("stuck-a").ignoresShutdown();
    FakeLoop b = new FakeLoop("stuck-b").ignoresShutdown();
    LoopGroup group = builder().loop(a).loop(b).shutdownTimeout(Duration.ofMillis(1500)).build();
    CompletableFuture<Void> run = runInBackground(group);
    awaitStarted(a, b);

    long t0 = System.nanoTime();
    group.shutdown();
    run.get(5, TimeUnit.SECONDS);
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);

    assertThat(tookMs).as("not before the deadline of 1.5 s").isGreaterThanOrEqualTo(1400L);
    assertThat(a.ended.await(5, TimeUnit.SECONDS)).isTrue();
    assertThat(b.ended.await(5, TimeUnit.SECONDS)).isTrue();
    assertThat(a.interrupted).isTrue();
    assertThat(b.interrupted).isTrue();
    // One deadline for both: the two are interrupted together, not 1.5 s apart (one each).
    assertThat(TimeUnit.NANOSECONDS.toMillis(Math.abs(a.interruptedAt - b.interruptedAt)))
        .as("between the two interrupts (ms)").isLessThan(1000L);
  }

  @Test
  void runWaitsForALoopInterruptedAtTheDeadlineToHandItsWorkBack() throws Exception {
    // the caller closes the store (or the JVM exits) once run() returns: the hand-back that the
    // interrupt starts must come first
    FakeLoop a = new FakeLoop("stuck").ignoresShutdown().handsBackIn(Duration.ofMillis(500));
    LoopGroup group = builder().loop(a).shutdownTimeout(Duration.ofMillis(300)).build();
    CompletableFuture<Void> run = runInBackground(group);
    awaitStarted(a);

    group.shutdown();
    run.get(10, TimeUnit.SECONDS);

    assertThat(a.interrupted).isTrue();
    assertThat(a.handedBack).as("handed back before run() returned").isTrue();
    assertThat(group.interruptedAtDeadline()).containsExactly("stuck");
  }

  @Test
  void shutdownWithTimeoutReportsFailureWhenLoopsDoNotStop() throws Exception {
    FakeLoop a = new FakeLoop("stuck").ignoresShutdown();
    LoopGroup group = builder().loop(a).shutdownTimeout(Duration.ofSeconds(10)).build();
    CompletableFuture<Void> run = runInBackground(group);
    awaitStarted(a);

    long t0 = System.nanoTime();
    boolean stopped = group.shutdown(Duration.ofMillis(500));
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);

    assertThat(stopped).isFalse();
    assertThat(tookMs).as("the call's 500 ms, not the group's 10 s").isBetween(450L, 5000L);
    assertThat(a.ended.await(5, TimeUnit.SECONDS)).as("interrupted after the timeout").isTrue();
    run.get(5, TimeUnit.SECONDS);
  }

  @Test
  void readinessIs200WhileAllLoopsRunAndBeatAnd503WhenAHeartbeatIsStaleOrALoopStopped()
      throws Exception {
    SettableTicker ticker = new SettableTicker();
    FakeLoop a = new FakeLoop("a", ticker);
    FakeLoop b = new FakeLoop("b", ticker);
    LoopGroup group =
        builder()
            .loop(a)
            .loop(b)
            .healthHost("127.0.0.1")
            .healthPort(0)
            .watchdogThreshold(Duration.ofSeconds(10))
            .watchdogInterval(Duration.ofSeconds(3))
            .build();
    runInBackground(group);
    awaitStarted(a, b);
    await().atMost(Duration.ofSeconds(5)).until(() -> group.healthAddress().isPresent());

    assertThat(status(group, "/health/ready")).isEqualTo(200);
    assertThat(status(group, "/health/live")).isEqualTo(200);

    ticker.advance(Duration.ofMillis(8_999));
    a.heartbeat().beat();
    assertThat(status(group, "/health/ready")).as("b just below 90% of the threshold").isEqualTo(200);
    ticker.advance(Duration.ofMillis(1)); // b: 9 s, 90% of the 10 s stall threshold
    assertThat(status(group, "/health/ready")).as("b is stale").isEqualTo(503);
    assertThat(group.isReady()).isFalse();
    assertThat(status(group, "/health/live")).isEqualTo(200);
    assertThat(terminations).as("readiness fails before the watchdog fires").isEmpty();

    b.heartbeat().beat();
    assertThat(status(group, "/health/ready")).isEqualTo(200);

    b.shutdown(); // b ends on its own; the group keeps a running
    assertThat(b.ended.await(5, TimeUnit.SECONDS)).isTrue();
    assertThat(status(group, "/health/ready")).as("b is not running").isEqualTo(503);
    assertThat(a.isRunning()).isTrue();
  }

  @Test
  void aLoopThatIsNotReadyMakesTheGroupUnready() throws Exception {
    FakeLoop a = new FakeLoop("a");
    FakeLoop b = new FakeLoop("b");
    LoopGroup group = builder().loop(a).loop(b).noWatchdog().build();
    runInBackground(group);
    awaitStarted(a, b);
    await().atMost(Duration.ofSeconds(5)).until(group::isReady);

    b.ready = false; // e.g. its mailbox cannot be reached
    assertThat(group.isReady()).isFalse();
    b.ready = true;
    assertThat(group.isReady()).isTrue();
  }

  @Test
  void aReadinessThresholdAboveTheWatchdogThresholdIsRejected() {
    assertThatThrownBy(
            () ->
                builder()
                    .loop(new FakeLoop("a"))
                    .watchdogThreshold(Duration.ofSeconds(10))
                    .readinessThreshold(Duration.ofSeconds(11))
                    .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("readinessThreshold (PT11S) must be <= watchdogThreshold (PT10S)");
  }

  @Test
  void anExplicitReadinessThresholdAppliesWithoutAWatchdog() throws Exception {
    SettableTicker ticker = new SettableTicker();
    FakeLoop a = new FakeLoop("a", ticker);
    LoopGroup group =
        builder().loop(a).noWatchdog().readinessThreshold(Duration.ofSeconds(5)).build();
    runInBackground(group);
    awaitStarted(a);
    await().atMost(Duration.ofSeconds(5)).until(group::isReady);
    ticker.advance(Duration.ofSeconds(5));
    assertThat(group.isReady()).isFalse();
    a.heartbeat().beat();
    assertThat(group.isReady()).isTrue();
  }

  @Test
  void healthServerRunsOnlyWhileTheGroupRuns() throws Exception {
    FakeLoop a = new FakeLoop("a");
    LoopGroup group = builder().loop(a).healthHost("127.0.0.1").healthPort(0).build();
    assertThat(group.healthAddress()).isEmpty();
    CompletableFuture<Void> run = runInBackground(group);
    awaitStarted(a);
    await().atMost(Duration.ofSeconds(5)).until(() -> group.healthAddress().isPresent());
    int port = group.healthAddress().orElseThrow().getPort();

    group.shutdown();
    run.get(5, TimeUnit.SECONDS);

    assertThat(group.healthAddress()).isEmpty();
    try (var rebind = new java.net.ServerSocket()) {
      rebind.bind(new java.net.InetSocketAddress("127.0.0.1", port));
    }
  }

  @Test
  void healthPortInUseFailsRunBeforeAnyLoopStarts() throws Exception {
    try (var taken = new java.net.ServerSocket(0, 50, java.net.InetAddress.getByName("127.0.0.1"))) {
      FakeLoop a = new FakeLoop("a");
      LoopGroup group =
          builder().loop(a).healthHost("127.0.0.1").healthPort(taken.getLocalPort()).build();

      assertThatThrownBy(group::run)
          .isInstanceOf(java.io.UncheckedIOException.class)
          .hasMessageContaining(String.valueOf(taken.getLocalPort()));
      assertThat(a.started.getCount()).as("no loop started").isEqualTo(1);
      assertThat(group.awaitTermination(Duration.ZERO)).isTrue();
    }
  }

  @Test
  void readinessFailsAsSoonAsShutdownIsRequested() throws Exception {
    FakeLoop slow = new FakeLoop("slow").stopDelay(Duration.ofMillis(800));
    LoopGroup group = builder().loop(slow).healthHost("127.0.0.1").healthPort(0).build();
    runInBackground(group);
    awaitStarted(slow);
    await().atMost(Duration.ofSeconds(5)).until(() -> group.healthAddress().isPresent());
    assertThat(status(group, "/health/ready")).isEqualTo(200);

    group.shutdown();

    assertThat(slow.isRunning()).isTrue();
    assertThat(status(group, "/health/ready")).isEqualTo(503);
  }

  @Test
  void throwingLoopIsLoggedWhileTheOthersKeepRunning() throws Exception {
    FakeLoop failing = new FakeLoop("failing").failsWith(new IllegalStateException("boom"));
    FakeLoop healthy = new FakeLoop("healthy");
    LoopGroup group = builder().loop(failing).loop(healthy).build();
    CompletableFuture<Void> run = runInBackground(group);

    assertThat(failing.ended.await(5, TimeUnit.SECONDS)).isTrue();
    awaitStarted(healthy);
    Thread.sleep(100); // the group must not react to the failure by stopping the others
    assertThat(healthy.isRunning()).isTrue();
    assertThat(healthy.shutdownCalls.get()).isZero();
    assertThat(run).isNotDone();
    assertThat(group.isReady()).as("a failed loop makes the group not ready").isFalse();

    group.shutdown();
    run.get(5, TimeUnit.SECONDS);
  }

  @Test
  void watchdogTerminatesForAStalledLoop() throws Exception {
    SettableTicker ticker = new SettableTicker();
    FakeLoop stuck = new FakeLoop("stuck", ticker);
    FakeLoop busy = new FakeLoop("busy", ticker).beatEvery(Duration.ofMillis(5));
    LoopGroup group =
        builder()
            .loop(stuck)
            .loop(busy)
            .watchdogThreshold(Duration.ofSeconds(1))
            .watchdogInterval(Duration.ofMillis(100))
            .build();
    runInBackground(group);
    awaitStarted(stuck, busy);
    Thread.sleep(150);
    assertThat(terminations).isEmpty();

    ticker.advance(Duration.ofSeconds(2));

    await().atMost(Duration.ofSeconds(5)).until(() -> !terminations.isEmpty());
    assertThat(terminations).extracting(Watchdog.Stall::name).contains("stuck");
    assertThat(terminations.get(0).threshold()).isEqualTo(Duration.ofSeconds(1));
  }

  @Test
  void uncalibratedTimeoutsFailTheBuildListingEveryRule() {
    FakeLoop loop =
        new FakeLoop("worker")
            .config(
                MainLoopConfig.builder()
                    .visibilityTimeout(Duration.ofSeconds(600))
                    .deadline(Duration.ofSeconds(700))
                    .leaseExtender(
                        LeaseExtenderConfig.of(Duration.ofSeconds(200), Duration.ofSeconds(300)))
                    .build());

    assertThatThrownBy(() -> builder().loop(loop).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("3 violated rules")
        .hasMessageContaining("loop 'worker'")
        .hasMessageContaining(Calibration.VISIBILITY_COVERS_WATCHDOG)
        .hasMessageContaining("visibility_timeout=600s")
        .hasMessageContaining(Calibration.WATCHDOG_COVERS_WORK)
        .hasMessageContaining(Calibration.EXTENSION_INTERVAL)
        .hasMessageContaining("Calibration.Mode.WARN");
    assertThatThrownBy(() -> builder().loop(new FakeLoop("x")).watchdogInterval(Duration.ofSeconds(300)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(Calibration.WATCHDOG_INTERVAL);

    assertThat(builder().loop(loop).calibration(Calibration.Mode.WARN).build()).isNotNull();
    assertThat(builder().loop(loop).calibration(Calibration.Mode.OFF).build()).isNotNull();
    assertThat(builder().loop(loop).noWatchdog().calibration(Calibration.Mode.ERROR))
        .as("without a watchdog only the extender rule is left")
        .satisfies(
            b ->
                assertThatThrownBy(b::build)
                    .hasMessageContaining("1 violated rule")
                    .hasMessageContaining(Calibration.EXTENSION_INTERVAL));
  }

  @Test
  void defaultsBuildWithoutComplaint() {
    FakeLoop loop =
        new FakeLoop("worker")
            .config(MainLoopConfig.builder().deadline(Duration.ofSeconds(600)).build());
    assertThat(builder().loop(loop).build()).isNotNull();
  }

  @Test
  void invalidGroupsAreRejectedAtBuild() {
    assertThatThrownBy(() -> builder().build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least one loop");
    assertThatThrownBy(() -> builder().loop(new FakeLoop("dup")).loop(new FakeLoop("dup")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'dup'");
    assertThatThrownBy(
            () ->
                builder()
                    .loop(new FakeLoop("a", new SettableTicker()))
                    .loop(new FakeLoop("b"))
                    .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("loop 'b'")
        .hasMessageContaining("share one ticker");
    assertThat(
            builder()
                .loop(new FakeLoop("a", new SettableTicker()))
                .loop(new FakeLoop("b"))
                .noWatchdog()
                .build())
        .as("tickers only matter to the watchdog")
        .isNotNull();
    assertThatThrownBy(() -> builder().shutdownTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("shutdownTimeout must be > 0, was PT0S");
    assertThatThrownBy(() -> builder().healthPort(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("healthPort must be 0..65535, was -1");
  }

  @Test
  void shutdownBeforeRunMakesRunReturnAtOnceAndRunIsOnceOnly() throws Exception {
    FakeLoop a = new FakeLoop("a");
    LoopGroup early = builder().loop(a).build();
    early.shutdown();
    early.run();
    assertThat(a.started.getCount()).as("never started").isEqualTo(1);
    assertThat(early.awaitTermination(Duration.ZERO)).isTrue();

    FakeLoop b = new FakeLoop("b");
    LoopGroup group = builder().loop(b).build();
    CompletableFuture<Void> run = runInBackground(group);
    awaitStarted(b);
    assertThatThrownBy(group::run)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("only once");
    group.shutdown();
    run.get(5, TimeUnit.SECONDS);
    assertThatThrownBy(group::run).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void interruptingTheRunThreadShutsTheGroupDownAndKeepsTheFlag() throws Exception {
    FakeLoop a = new FakeLoop("a");
    LoopGroup group = builder().loop(a).build();
    groups.add(group);
    AtomicReference<Boolean> flagAfterRun = new AtomicReference<>();
    Thread runner =
        new Thread(
            () -> {
              group.run();
              flagAfterRun.set(Thread.currentThread().isInterrupted());
            },
            "test-interrupted-runner");
    runner.start();
    awaitStarted(a);

    runner.interrupt();
    runner.join(5000);

    assertThat(runner.isAlive()).isFalse();
    assertThat(a.signalled.getCount()).isZero();
    assertThat(flagAfterRun.get()).isTrue();
  }

  @Test
  void extraHealthRoutesAreMountedOnTheGroupsServer() throws Exception {
    FakeLoop a = new FakeLoop("a");
    LoopGroup group =
        builder()
            .loop(a)
            .healthHost("127.0.0.1")
            .healthPort(0)
            .healthRoute(
                "/metrics",
                exchange -> {
                  exchange.sendResponseHeaders(204, -1);
                  exchange.close();
                })
            .build();
    runInBackground(group);
    awaitStarted(a);
    await().atMost(Duration.ofSeconds(5)).until(() -> group.healthAddress().isPresent());

    assertThat(status(group, "/metrics")).isEqualTo(204);
  }
}
