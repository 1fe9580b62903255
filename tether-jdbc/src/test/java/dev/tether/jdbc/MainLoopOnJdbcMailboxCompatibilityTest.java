package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.LeaseExtenderConfig;
import dev.tether.loop.LoopGroup;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.loop.WorkContext;
import dev.tether.mailbox.Message;
import dev.tether.test.SettableTicker;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The core runtime (MainLoop, LeaseExtender, LoopGroup) on durable queues: beats extend leases in
 * the database, a stuck handler loses its item to another loop, a group drains a queue.
 */
abstract class MainLoopOnJdbcMailboxCompatibilityTest extends StoreTestBase {
  private final SettableTicker ticker = new SettableTicker();

  /** Visibility 10 s, extension to 10 s at most every 1 s, no long poll. */
  private final MainLoopConfig config =
      MainLoopConfig.builder()
          .visibilityTimeout(Duration.ofSeconds(10))
          .leaseExtender(LeaseExtenderConfig.of(Duration.ofSeconds(1), Duration.ofSeconds(10)))
          .waitTime(Duration.ZERO)
          .build();

  private void advance(Duration d) {
    clock.advance(d);
    ticker.advance(d);
  }

  @Test
  void aBeatingHandlerKeepsItsDurableLeasePastTheVisibilityTimeout() {
    JdbcMailbox<String, String> jobs = JdbcMailbox.ofStrings(store, "jobs");
    String id = jobs.send("build");
    AtomicInteger steps = new AtomicInteger();

    MainLoop.builder(
            "worker",
            jobs,
            (String body, WorkContext ctx) -> {
              for (int i = 0; i < 10; i++) { // 30 s of work against a 10 s visibility timeout
                advance(Duration.ofSeconds(3));
                ctx.beat();
                steps.incrementAndGet();
              }
              return body + " done";
            })
        .config(config)
        .ticker(ticker)
        .build()
        .run(1);

    WorkItem item = new LeaseManager(store, "inspector").find(Long.parseLong(id)).orElseThrow();
    assertThat(steps.get()).isEqualTo(10);
    assertThat(item.status()).isEqualTo(WorkStatus.COMPLETED);
    assertThat(item.deliveryCount()).isEqualTo(1);
    assertThat(item.checkpoints()).isEmpty();
  }

  @Test
  void aStuckHandlerLosesItsDurableLeaseAndAnotherLoopCompletesTheItemOnce() {
    JdbcMailbox<String, String> jobs = JdbcMailbox.ofStrings(store, "jobs");
    String id = jobs.send("report");
    AtomicInteger completions = new AtomicInteger();
    MainLoop<String, String> healthy =
        MainLoop.builder(
                "healthy",
                jobs,
                (String body, WorkContext ctx) -> {
                  completions.incrementAndGet();
                  return "fresh";
                })
            .config(config)
            .ticker(ticker)
            .build();

    MainLoop.builder(
            "stuck",
            jobs,
            (String body, WorkContext ctx) -> {
              advance(Duration.ofSeconds(11)); // no beats past the visibility timeout
              healthy.run(1); // meanwhile another loop takes the item over and completes it
              return "stale";
            })
        .config(config)
        .ticker(ticker)
        .build()
        .run(1);

    WorkItem item = new LeaseManager(store, "inspector").find(Long.parseLong(id)).orElseThrow();
    assertThat(completions.get()).isEqualTo(1);
    assertThat(item.status()).isEqualTo(WorkStatus.COMPLETED);
    assertThat(item.deliveryCount()).isEqualTo(2);
    assertThat(item.checkpoints()).extracting(Checkpoint::kind).containsExactly("lease_expired");
  }

  @Test
  void aCancellationByAnotherStoreReachesTheRunningHandlerWithNoExtensionDueAndItsResultIsRefused()
      throws Exception {
    TetherStoreConfig realTime = TetherStoreConfig.builder().maximumPoolSize(4).build();
    try (TetherStore holderStore = db.open(realTime); TetherStore operatorStore = db.open(realTime)) {
      JdbcMailbox<String, String> jobs = JdbcMailbox.ofStrings(holderStore, "cancel");
      long id = Long.parseLong(jobs.send("a long job"));
      java.util.concurrent.CountDownLatch running = new java.util.concurrent.CountDownLatch(1);
      java.util.concurrent.atomic.AtomicLong seenAfterNanos = new java.util.concurrent.atomic.AtomicLong(-1);
      java.util.concurrent.atomic.AtomicLong cancelledAt = new java.util.concurrent.atomic.AtomicLong();
      MainLoop<String, String> loop = MainLoop.builder("holder", jobs, (String body, WorkContext ctx) -> {
        running.countDown();
        // no beats: no extension is due for minutes, so only the watch can tell the handler
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(10)).until(ctx::isCancelled);
        seenAfterNanos.set(System.nanoTime() - cancelledAt.get());
        return "finished anyway";
      }).config(MainLoopConfig.builder()
              .visibilityTimeout(Duration.ofMinutes(10))
              .leaseExtender(LeaseExtenderConfig.of(Duration.ofMinutes(4), Duration.ofMinutes(9)))
              .waitTime(Duration.ofMillis(200))
              .build())
          .build();
      Thread holder = new Thread(() -> loop.run(1), "tether-test-holder");
      holder.start();
      assertThat(running.await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();

      cancelledAt.set(System.nanoTime());
      assertThat(new QueueAdmin(operatorStore).cancel(id, "stopped by an operator")).isTrue();
      holder.join(30_000);

      assertThat(holder.isAlive()).isFalse();
      assertThat(seenAfterNanos.get()).as("the handler saw the cancellation").isPositive();
      // generous: the watch tells within about a second (a notification, or a check every 500 ms)
      assertThat(Duration.ofNanos(seenAfterNanos.get())).isLessThan(Duration.ofSeconds(10));
      WorkItem item = new LeaseManager(operatorStore, "inspector").find(id).orElseThrow();
      assertThat(item.status()).isEqualTo(WorkStatus.CANCELLED);
      assertThat(item.output()).as("the handler's result was refused").isNull();
      assertThat(holderStore.cancelWatch().watchedCount()).isZero();
    }
  }

  @Test
  void anItemTakenAtTheEndOfALongPollLongerThanTheVisibilityTimeoutIsHeldNotLost() throws Exception {
    try (TetherStore realTime = db.open(TetherStoreConfig.builder().maximumPoolSize(4).build())) {
      JdbcMailbox<String, String> jobs = JdbcMailbox.ofStrings(realTime, "late");
      java.util.concurrent.atomic.AtomicReference<String> seen = new java.util.concurrent.atomic.AtomicReference<>();
      MainLoop<String, String> loop = MainLoop.builder("late", jobs, (String body, WorkContext ctx) -> {
            ctx.beat();
            seen.set("lost=" + ctx.isLeaseLost() + " lease=" + ctx.checkLease());
            return body + " done";
          })
          .config(MainLoopConfig.builder()
              .visibilityTimeout(Duration.ofSeconds(2))
              .leaseExtender(LeaseExtenderConfig.of(Duration.ofMillis(500), Duration.ofMillis(1500)))
              .waitTime(Duration.ofSeconds(8))
              .build())
          .build();
      Thread runner = new Thread(() -> loop.run(1), "late-loop");
      runner.start();
      // The item arrives when the loop has waited longer than the visibility timeout: its lease
      // starts when it is taken, not when the wait began (which is why this test waits in real time).
      Thread.sleep(3000);
      String id = jobs.send("report");
      runner.join(Duration.ofSeconds(30).toMillis());

      assertThat(seen.get()).isEqualTo("lost=false lease=HELD");
      WorkItem item = new LeaseManager(realTime, "inspector").find(Long.parseLong(id)).orElseThrow();
      assertThat(item.status()).isEqualTo(WorkStatus.COMPLETED);
      assertThat(item.deliveryCount()).isEqualTo(1);
    }
  }

  @Test
  void aLoopGroupOfTwoLoopsDrainsADurableQueueCompletingEachItemOnce() throws Exception {
    try (TetherStore realTime = db.open(TetherStoreConfig.builder().maximumPoolSize(6).build())) {
      JdbcMailbox<String, String> jobs = JdbcMailbox.ofStrings(realTime, "drain");
      int items = 200;
      for (int i = 0; i < items; i++) {
        jobs.send("item-" + i);
      }
      Set<String> done = ConcurrentHashMap.newKeySet();
      AtomicInteger duplicates = new AtomicInteger();
      MainLoopConfig realConfig =
          MainLoopConfig.builder()
              .visibilityTimeout(Duration.ofSeconds(30))
              .leaseExtender(LeaseExtenderConfig.of(Duration.ofSeconds(1), Duration.ofSeconds(10)))
              .waitTime(Duration.ofMillis(200))
              .maxMessages(5)
              .build();
      LoopGroup.Builder group = LoopGroup.builder().noWatchdog().handleSignals(false);
      for (String name : List.of("a", "b")) {
        group.loop(
            MainLoop.builder(
                    name,
                    jobs,
                    (String body, WorkContext ctx) -> {
                      ctx.beat();
                      if (!done.add(body)) {
                        duplicates.incrementAndGet();
                      }
                      return body;
                    })
                .config(realConfig)
                .build());
      }
      LoopGroup loops = group.build();
      Thread runner = new Thread(loops::run, "test-group");
      runner.start();

      await().atMost(Duration.ofSeconds(60)).until(() -> done.size() == items);
      assertThat(loops.shutdown(Duration.ofSeconds(10))).isTrue();
      runner.join(10_000);

      assertThat(duplicates.get()).isZero();
      assertThat(jobs.approximateCount()).isZero();
      QueueMonitor monitor = new QueueMonitor(realTime);
      assertThat(monitor.countsByStatus())
          .filteredOn(c -> c.queue().equals("drain"))
          .allSatisfy(c -> assertThat(c.status()).isEqualTo(WorkStatus.COMPLETED));
      List<Message<String, String>> left = jobs.receive(10, Duration.ofSeconds(1), Duration.ZERO);
      assertThat(left).isEmpty();
    }
  }

  @Test
  void withMaxAttemptsTwoAHandlerThatAlwaysFailsRunsExactlyTwiceThenTheItemFails() {
    JdbcMailbox<String, String> jobs = JdbcMailbox.builder(store, "jobs", dev.tether.Codec.utf8(),
        dev.tether.Codec.utf8()).maxAttempts(2).build();
    long id = Long.parseLong(jobs.send("exit 3"));
    AtomicInteger runs = new AtomicInteger();
    dev.tether.loop.Handler<String, String> failing = (body, ctx) -> {
      runs.incrementAndGet();
      throw new IllegalStateException("command exited 3");
    };

    for (int i = 0; i < 5; i++) { // more receives than the budget allows, each past any backoff
      MainLoop.builder("worker", jobs, failing).config(config).ticker(ticker).build().run(1);
      advance(Duration.ofMinutes(10));
    }

    assertThat(runs.get()).isEqualTo(2);
    WorkItem item = new LeaseManager(store, "reader").find(id).orElseThrow();
    assertThat(item.status()).isEqualTo(WorkStatus.FAILED);
    assertThat(item.deliveryCount()).isEqualTo(2);
    assertThat(item.attempts()).isEqualTo(2);
    assertThat(item.errorMessage()).contains("attempt 2 of 2").contains("command exited 3");
  }

  @Test
  void aWorkerShutDownGracefullyOnTheLastAttemptHandsTheItemBackUnchargedAndItCompletes() {
    LeaseManager producer = new LeaseManager(store, "producer");
    long id = producer.enqueue(NewWorkItem.builder("jobs").input("sleep 30").maxAttempts(1).build());
    JdbcMailbox<String, String> jobs = JdbcMailbox.ofStrings(store, "jobs");
    java.util.concurrent.atomic.AtomicReference<MainLoop<String, String>> self =
        new java.util.concurrent.atomic.AtomicReference<>();
    MainLoop<String, String> first = MainLoop.builder("first", jobs, (String body, WorkContext ctx) -> {
      self.get().shutdown(); // SIGTERM mid-item
      throw new dev.tether.loop.WorkStoppedException(
          dev.tether.loop.WorkStoppedException.Reason.SHUTDOWN, "worker shutting down");
    }).config(config).ticker(ticker).build();
    self.set(first);
    first.run();

    List<String> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
    MainLoop.builder("second", jobs, (String body, WorkContext ctx) -> {
      seen.add("delivery " + ctx.deliveryCount() + ", attempt " + ctx.attempt() + "/" + ctx.maxAttempts());
      return "done";
    }).config(config).ticker(ticker).build().run(1);

    assertThat(seen).containsExactly("delivery 2, attempt 1/1");
    WorkItem item = producer.find(id).orElseThrow();
    assertThat(item.status()).isEqualTo(WorkStatus.COMPLETED);
    assertThat(item.checkpoints()).extracting(Checkpoint::kind).containsExactly(Checkpoint.HANDED_BACK);
  }

  @Test
  void aRequestDeadLetteredWithAReplyToIsAnsweredWithAnErrorReply() {
    JdbcMailbox<String, String> replies = JdbcMailbox.ofStrings(store, "replies");
    JdbcMailbox<String, String> jobs = JdbcMailbox.builder(store, "jobs", dev.tether.Codec.utf8(),
        dev.tether.Codec.utf8()).maxAttempts(1).build();
    String id = jobs.send("question", replies);

    MainLoop.builder("worker", jobs, (String body, WorkContext ctx) -> {
      throw new IllegalArgumentException("cannot answer " + body);
    }).config(config).ticker(ticker).build().run(1);

    Message<String, String> answer = replies.receive(1, Duration.ofMinutes(1), Duration.ZERO).get(0);
    assertThat(answer.inReplyTo()).hasValue(id);
    assertThat(answer.errorReply()).hasValueSatisfying(e -> {
      assertThat(e.requestId()).isEqualTo(id);
      assertThat(e.attempts()).isEqualTo(1);
      assertThat(e.cancelled()).isFalse();
      assertThat(e.reason()).contains("cannot answer question");
    });
    org.assertj.core.api.Assertions.assertThatThrownBy(answer::body)
        .isInstanceOf(dev.tether.mailbox.RequestFailedException.class);
  }

  @Test
  void aCancelledRequestIsAnsweredWithAnErrorReplySayingSo() {
    JdbcMailbox<String, String> replies = JdbcMailbox.ofStrings(store, "replies");
    JdbcMailbox<String, String> jobs = JdbcMailbox.ofStrings(store, "jobs");
    String id = jobs.send("question", replies);

    assertThat(jobs.cancel(id, "not needed any more")).isTrue();

    Message<String, String> answer = replies.receive(1, Duration.ofMinutes(1), Duration.ZERO).get(0);
    assertThat(answer.errorReply()).hasValueSatisfying(e -> {
      assertThat(e.requestId()).isEqualTo(id);
      assertThat(e.cancelled()).isTrue();
      assertThat(e.reason()).isEqualTo("not needed any more");
    });
    assertThat(jobs.receive(1, Duration.ofMinutes(1), Duration.ZERO)).isEmpty();
  }
}
