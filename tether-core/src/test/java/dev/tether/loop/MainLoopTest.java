package dev.tether.loop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.tether.Heartbeat;
import dev.tether.LeaseExtenderConfig;
import dev.tether.mailbox.DeadLetterPolicy;
import dev.tether.mailbox.InMemoryMailbox;
import dev.tether.mailbox.Message;
import dev.tether.test.SettableClock;
import dev.tether.test.SettableTicker;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class MainLoopTest {
  private final SettableClock clock = new SettableClock();
  private final SettableTicker ticker = new SettableTicker();
  private final InMemoryMailbox<String, String> requests =
      InMemoryMailbox.<String, String>builder("requests").clock(clock).build();
  private final InMemoryMailbox<String, String> replies =
      InMemoryMailbox.<String, String>builder("replies").clock(clock).build();
  private final RecordingListener events = new RecordingListener();

  /** Visibility 10 s, extension 10 s at most every 1 s, no long poll. */
  private final MainLoopConfig config =
      MainLoopConfig.builder()
          .visibilityTimeout(Duration.ofSeconds(10))
          .leaseExtender(LeaseExtenderConfig.of(Duration.ofSeconds(1), Duration.ofSeconds(10)))
          .waitTime(Duration.ZERO)
          .build();

  @AfterEach
  void closeMailboxes() {
    requests.close();
    replies.close();
  }

  private void advance(Duration d) {
    clock.advance(d);
    ticker.advance(d);
  }

  private MainLoop<String, String> loop(Handler<String, String> handler) {
    return loop(config, handler);
  }

  private MainLoop<String, String> loop(MainLoopConfig cfg, Handler<String, String> handler) {
    return MainLoop.builder("worker", requests, handler)
        .config(cfg)
        .ticker(ticker)
        .listener(events)
        .build();
  }

  @Test
  void handlesAMessageThenRepliesAndAcknowledgesIt() {
    requests.send("hello", replies);

    loop((body, ctx) -> body.toUpperCase()).run(1);

    assertThat(requests.approximateCount()).isZero();
    List<Message<String, String>> got = replies.receive(10, Duration.ofSeconds(30), Duration.ZERO);
    assertThat(got).extracting(Message::body).containsExactly("HELLO");
    assertThat(events.log).containsExactly("received", "completed");
  }

  @Test
  void beatsAfterReceiveEvenWhenIdle() { // an idle loop is a live loop
    MainLoop<String, String> loop = loop((body, ctx) -> body);
    advance(Duration.ofSeconds(30));
    assertThat(loop.heartbeat().elapsed()).isEqualTo(Duration.ofSeconds(30));

    loop.run(1);

    assertThat(loop.heartbeat().elapsed()).isZero();
  }

  @Test
  void beatsAfterEachMessage() { 
    requests.send("a");
    MainLoop<String, String> loop =
        loop(
            (body, ctx) -> {
              advance(Duration.ofSeconds(5)); // work without beating
              return body;
            });
    loop.run(1);
    assertThat(loop.heartbeat().elapsed()).isZero();
  }

  @Test
  void leaseStaysAliveBeyondTheVisibilityTimeoutWhileTheHandlerBeats() {
    requests.send("long job", replies);
    ToolExecutor tools =
        ToolExecutor.builder()
            .tool(
                "step",
                (Tool<Integer, Integer>)
                    (n, tctx) -> {
                      advance(Duration.ofSeconds(3));
                      return n + 1;
                    })
            .build();
    AtomicInteger extensionsSeen = new AtomicInteger();

    loop(
            (body, ctx) -> {
              int n = 0;
              for (int i = 0; i < 10; i++) { // 30 s of work, visibility 10 s
                n = (Integer) tools.execute("step", n, ctx);
              }
              extensionsSeen.set(ctx.isLeaseLost() ? -1 : n);
              return "done " + n;
            })
        .run(1);

    assertThat(extensionsSeen.get()).isEqualTo(10);
    assertThat(events.log).containsExactly("received", "completed");
    assertThat(replies.receive(1, Duration.ofSeconds(1), Duration.ZERO))
        .extracting(Message::body)
        .containsExactly("done 10");
  }

  @Test
  void aStuckHandlerLosesItsLeaseAndTheMessageIsRedeliveredToAnotherWorker() {
    // a stuck worker loses its lease, end to end
    requests.send("job");
    AtomicReference<Message<String, String>> takenOver = new AtomicReference<>();

    loop(
            (body, ctx) -> {
              advance(Duration.ofSeconds(11)); // stuck: no beats past the visibility timeout
              List<Message<String, String>> other =
                  requests.receive(1, Duration.ofSeconds(60), Duration.ZERO);
              takenOver.set(other.get(0));
              return "stale result";
            })
        .run(1);

    assertThat(takenOver.get().deliveryCount()).isEqualTo(2);
    assertThat(events.log).containsExactly("received", "leaseLost");
    takenOver.get().acknowledge(); // the new owner completes it
    assertThat(requests.approximateCount()).isZero();
  }

  @Test
  void extensionNeverShortensALeaseReceivedWithALongerVisibilityTimeout() {
    // DESIGN.md trap: extending to now + extension cut a 1800 s lease to 300 s at the first beat.
    requests.send("long", replies);
    MainLoopConfig cfg =
        MainLoopConfig.builder()
            .visibilityTimeout(Duration.ofSeconds(1800))
            .leaseExtender(LeaseExtenderConfig.of(Duration.ofSeconds(60), Duration.ofSeconds(300)))
            .waitTime(Duration.ZERO)
            .build();
    AtomicReference<List<Message<String, String>>> seenByOthers = new AtomicReference<>();

    loop(
            cfg,
            (body, ctx) -> {
              advance(Duration.ofSeconds(61));
              ctx.beat(); // due: extends to max(1800 s, 61 s + 300 s) = 1800 s
              advance(Duration.ofSeconds(1000)); // t = 1061 s: past 361 s, before 1800 s
              seenByOthers.set(requests.receive(1, Duration.ofSeconds(60), Duration.ZERO));
              return "done";
            })
        .run(1);

    assertThat(seenByOthers.get()).isEmpty();
    assertThat(events.log).containsExactly("received", "completed");
  }

  @Test
  void aStaleWorkersResultIsNeitherRepliedNorAcknowledged() {
    // DESIGN.md trap: the reference replied before acknowledging, without checking the handle.
    requests.send("job", replies);
    AtomicReference<Message<String, String>> newOwner = new AtomicReference<>();

    loop(
            (body, ctx) -> {
              advance(Duration.ofSeconds(11));
              newOwner.set(requests.receive(1, Duration.ofSeconds(60), Duration.ZERO).get(0));
              return "stale result";
            })
        .run(1);

    assertThat(replies.approximateCount()).isZero();
    newOwner.get().replyAndAcknowledge("fresh result");
    assertThat(replies.receive(10, Duration.ofSeconds(1), Duration.ZERO))
        .extracting(Message::body)
        .containsExactly("fresh result");
  }

  @Test
  void theHandlerSeesThatItsLeaseIsLostAndCanStopEarly() {
    requests.send("job");
    AtomicReference<Boolean> sawLoss = new AtomicReference<>();

    loop(
            (body, ctx) -> {
              // The mailbox's clock lets another worker take over; this worker's monotonic
              // ticker has not yet reached the end of the lease it was granted.
              clock.advance(Duration.ofSeconds(11));
              ticker.advance(Duration.ofSeconds(2));
              requests.receive(1, Duration.ofSeconds(60), Duration.ZERO); // another worker takes over
              assertThat(ctx.isLeaseLost()).isFalse();
              ctx.beat(); // the due extension is refused: receipt handle expired
              sawLoss.set(ctx.isLeaseLost());
              return InnerLoop.run(0, ctx, (s, c) -> s < 3 ? s + 1 : null).toString();
            })
        .run(1);

    assertThat(sawLoss.get()).isTrue();
    assertThat(events.log).containsExactly("received", "leaseLost");
  }

  @Test
  void aLeaseThatRanOutWithoutAConfirmedExtensionIsPresumedLost() {
    requests.send("job");
    List<Boolean> seen = new CopyOnWriteArrayList<>();

    loop(
            (body, ctx) -> {
              ticker.advance(Duration.ofSeconds(9)); // silent work, no beat
              seen.add(ctx.isLeaseLost());
              ticker.advance(Duration.ofSeconds(1)); // the 10 s visibility timeout has passed
              seen.add(ctx.isLeaseLost());
              ctx.beat(); // too late: a presumed-lost lease is not extended
              seen.add(ctx.isLeaseLost());
              throw WorkStoppedException.because(ctx);
            })
        .run(1);

    assertThat(seen).containsExactly(false, true, true);
    assertThat(events.log).containsExactly("received", "leaseLost");
    assertThat(requests.approximateCount()).as("left for its next owner").isEqualTo(1);
  }

  @Test
  void aBeatingHandlerKeepsItsLeaseHeldByTheLocalBound() {
    requests.send("job");
    List<Boolean> seen = new CopyOnWriteArrayList<>();

    loop(
            (body, ctx) -> {
              for (int i = 0; i < 30; i++) {
                advance(Duration.ofSeconds(1));
                ctx.beat(); // extends to now + 10 s each second
                seen.add(ctx.isLeaseLost());
              }
              return "done";
            })
        .run(1);

    assertThat(seen).hasSize(30).containsOnly(false);
    assertThat(events.log).containsExactly("received", "completed");
  }

  @Test
  void aFailingHandlerIsNackedWithBackoffThatGrowsWithAttempts() {
    requests.send("flaky");
    DeadLetterPolicy policy =
        DeadLetterPolicy.builder()
            .backoff(Duration.ofSeconds(2), Duration.ofMinutes(1))
            .build();
    MainLoopConfig cfg = config.toBuilder().deadLetterPolicy(policy).build();
    AtomicInteger attempts = new AtomicInteger();
    Handler<String, String> failing =
        (body, ctx) -> {
          attempts.incrementAndGet();
          throw new IllegalStateException("boom");
        };

    loop(cfg, failing).run(1);
    assertThat(requests.receive(1, Duration.ofSeconds(10), Duration.ZERO)).isEmpty();
    advance(Duration.ofSeconds(2)); // backoff(1) = 2 s
    loop(cfg, failing).run(1);
    advance(Duration.ofSeconds(3));
    assertThat(requests.receive(1, Duration.ofSeconds(10), Duration.ZERO)).isEmpty();
    advance(Duration.ofSeconds(1)); // backoff(2) = 4 s
    List<Message<String, String>> again = requests.receive(1, Duration.ofSeconds(10), Duration.ZERO);

    assertThat(attempts.get()).isEqualTo(2);
    assertThat(again).singleElement().extracting(Message::deliveryCount).isEqualTo(3);
  }

  @Test
  void aPolicyCapDeadLettersAMessageBeforeItsOwnBudgetIsSpent() {
    requests.send("poison");
    MainLoopConfig cfg =
        config.toBuilder()
            .deadLetterPolicy(
                DeadLetterPolicy.builder()
                    .maxAttempts(2)
                    .backoff(Duration.ofSeconds(1), Duration.ofSeconds(1))
                    .build())
            .build();
    Handler<String, String> failing =
        (body, ctx) -> {
          throw new IllegalArgumentException("bad input");
        };

    loop(cfg, failing).run(1);
    advance(Duration.ofSeconds(1));
    loop(cfg, failing).run(1);

    assertThat(requests.deadLetters()).singleElement().satisfies(d -> {
      assertThat(d.body()).isEqualTo("poison");
      assertThat(d.reason()).contains("attempt 2 of 2").contains("bad input");
      assertThat(d.attempts()).isEqualTo(2);
    });
    assertThat(events.log).containsExactly("received", "failed", "received", "failed");
  }

  @Test
  void anErrorTypeListedToDeadLetterAtOnceSkipsTheRetries() {
    requests.send("malformed");
    MainLoopConfig cfg =
        config.toBuilder()
            .deadLetterPolicy(
                DeadLetterPolicy.builder().deadLetterOn(IllegalArgumentException.class).build())
            .build();
    loop(
            cfg,
            (body, ctx) -> {
              throw new NumberFormatException("not a number"); // a subclass matches
            })
        .run(1);
    assertThat(requests.deadLetters()).hasSize(1);
  }

  @Test
  void onShutdownMessagesNotYetStartedAreHandedBackAtOnce() {
    requests.send("first");
    requests.send("second");
    requests.send("third");
    MainLoopConfig cfg = config.toBuilder().maxMessages(3).build();
    AtomicReference<MainLoop<String, String>> self = new AtomicReference<>();
    List<String> handled = new CopyOnWriteArrayList<>();
    MainLoop<String, String> loop =
        loop(
            cfg,
            (body, ctx) -> {
              handled.add(body);
              self.get().shutdown();
              assertThat(ctx.isShutdownRequested()).isTrue();
              return body; // the started message still completes
            });
    self.set(loop);

    loop.run();

    assertThat(handled).containsExactly("first");
    // nack(0): visible again at once, without advancing the clock
    List<Message<String, String>> back = requests.receive(10, Duration.ofSeconds(10), Duration.ZERO);
    assertThat(back).extracting(Message::body).containsExactly("second", "third");
    assertThat(requests.approximateCount()).isEqualTo(2);
  }

  @Test
  void aHandlerStoppingForShutdownHandsItsMessageBack() {
    requests.send("long");
    AtomicReference<MainLoop<String, String>> self = new AtomicReference<>();
    MainLoop<String, String> loop =
        loop(
            (body, ctx) -> {
              self.get().shutdown();
              // stops at once: shutdown requested
              return InnerLoop.run(0, ctx, (Integer s, WorkContext c) -> s + 1).toString();
            });
    self.set(loop);
    loop.run();
    assertThat(requests.receive(1, Duration.ofSeconds(10), Duration.ZERO))
        .extracting(Message::body, Message::attempt)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("long", 1));
    assertThat(events.log).containsExactly("received", "handedBack");
  }

  @Test
  void shutdownWakesALoopBlockedInALongPoll() {
    MainLoopConfig cfg = config.toBuilder().waitTime(Duration.ofSeconds(20)).build();
    MainLoop<String, String> loop =
        MainLoop.builder("poller", requests, (String body, WorkContext ctx) -> body)
            .config(cfg)
            .build();
    Thread t = new Thread(loop::run);
    t.start();
    await().atMost(Duration.ofSeconds(5)).until(loop::isRunning);

    loop.shutdown();

    await().atMost(Duration.ofSeconds(5)).until(() -> !t.isAlive());
    assertThat(loop.isRunning()).isFalse();
  }

  @Test
  void aNestedLoopsBeatsExtendTheOuterLease() {
    // an evaluating loop passes its heartbeat to the inner loop's execute
    InMemoryMailbox<String, String> unused =
        InMemoryMailbox.<String, String>builder("inner").clock(clock).build();
    MainLoop<String, String> inner =
        MainLoop.builder(
                "inner",
                unused,
                (String body, WorkContext ctx) -> {
                  for (int i = 0; i < 10; i++) {
                    advance(Duration.ofSeconds(3));
                    ctx.beat();
                  }
                  return body + " evaluated";
                })
            .ticker(ticker)
            .build();
    requests.send("sample", replies);

    loop((body, ctx) -> inner.execute(body, ctx)).run(1);

    assertThat(events.log).containsExactly("received", "completed");
    assertThat(replies.receive(1, Duration.ofSeconds(1), Duration.ZERO))
        .extracting(Message::body)
        .containsExactly("sample evaluated");
    unused.close();
  }

  @Test
  void theContextCarriesDeliveryCountAndDeadline() {
    requests.send("job");
    MainLoopConfig cfg = config.toBuilder().deadline(Duration.ofMinutes(10)).build();
    AtomicReference<WorkContext> seen = new AtomicReference<>();
    loop(
            cfg,
            (body, ctx) -> {
              seen.set(ctx);
              assertThat(ctx.deadline()).get().extracting(Deadline::remaining)
                  .isEqualTo(Duration.ofMinutes(10));
              advance(Duration.ofMinutes(10));
              assertThat(ctx.shouldStop()).isTrue();
              ctx.beat();
              return body;
            })
        .run(1);
    assertThat(seen.get().deliveryCount()).isEqualTo(1);
    assertThat(seen.get().messageId()).isPresent();
  }

  @Test
  void receiveFailuresMakeTheLoopUnreadyBackOffDoublingAndRecover() {
    requests.send("job");
    java.util.List<Long> attemptsAt = new CopyOnWriteArrayList<>();
    AtomicInteger failuresLeft = new AtomicInteger(3);
    dev.tether.mailbox.Mailbox<String, String> flaky =
        new dev.tether.mailbox.ForwardingMailbox<>("flaky", requests) {
          @Override
          public List<Message<String, String>> receive(int max, Duration visibility, Duration wait) {
            attemptsAt.add(ticker.read());
            if (failuresLeft.getAndDecrement() > 0) {
              throw new dev.tether.mailbox.MailboxConnectionException("database unreachable");
            }
            return super.receive(max, visibility, wait);
          }
        };
    MainLoop<String, String> loop =
        MainLoop.builder("worker", flaky, (String body, WorkContext ctx) -> body)
            .config(config)
            .ticker(ticker)
            .listener(events)
            .build();
    Thread t = new Thread(() -> loop.run(4));
    t.start();

    await().atMost(Duration.ofSeconds(5)).until(() -> !attemptsAt.isEmpty());
    await().atMost(Duration.ofSeconds(5)).until(() -> !loop.isReady());
    // move time along until the fourth receive (the first that works) has happened
    await()
        .atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(5))
        .until(
            () -> {
              ticker.advance(Duration.ofMillis(500));
              return !t.isAlive();
            });

    assertThat(loop.isReady()).isTrue();
    assertThat(events.log).containsExactly("received", "completed");
    assertThat(attemptsAt).hasSize(4);
    // backoff 1 s, 2 s, 4 s between the failed receives
    assertThat(attemptsAt.get(1) - attemptsAt.get(0)).isGreaterThanOrEqualTo(1_000_000_000L);
    assertThat(attemptsAt.get(2) - attemptsAt.get(1)).isGreaterThanOrEqualTo(2_000_000_000L);
    assertThat(attemptsAt.get(3) - attemptsAt.get(2)).isGreaterThanOrEqualTo(4_000_000_000L);
    assertThat(MainLoop.receiveBackoff(20)).isEqualTo(MainLoop.MAX_RECEIVE_FAILURE_BACKOFF);
  }

  @Test
  void anUnavailableMailboxStoreMakesTheLoopUnreadyWithoutAFailedReceive() {
    java.util.concurrent.atomic.AtomicBoolean available =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    dev.tether.mailbox.Mailbox<String, String> store =
        new dev.tether.mailbox.ForwardingMailbox<>("store", requests) {
          @Override
          public boolean isAvailable() {
            return available.get();
          }
        };
    MainLoop<String, String> loop =
        MainLoop.builder("worker", store, (String body, WorkContext ctx) -> body)
            .config(config)
            .ticker(ticker)
            .build();
    loop.run(1); // a receive that worked
    assertThat(loop.isReady()).isTrue();

    available.set(false); // e.g. an acknowledgement failed: the database went away
    assertThat(loop.isReady()).isFalse();

    available.set(true);
    assertThat(loop.isReady()).isTrue();
  }

  @Test
  void theDefaultMailboxIsAlwaysAvailable() {
    assertThat(requests.isAvailable()).isTrue();
    requests.close();
    assertThat(requests.isAvailable()).isTrue();
  }

  @Test
  void aLoopRunsOnlyOnce() {
    MainLoop<String, String> loop = loop((body, ctx) -> body);
    loop.run(1);
    assertThatThrownBy(() -> loop.run(1))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("already been run");
  }

  @Test
  void aHeartbeatOnAnotherTickerIsRejected() {
    assertThatThrownBy(
            () ->
                MainLoop.builder("w", requests, (String b, WorkContext c) -> b)
                    .ticker(ticker)
                    .heartbeat(new Heartbeat())
                    .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ticker");
  }

  @Test
  void withDefaultSettingsAMessageGetsExactlyItsBudgetOfAttempts() {
    InMemoryMailbox<String, String> jobs = InMemoryMailbox.<String, String>builder("jobs")
        .clock(clock).maxAttempts(2).build();
    jobs.send("always fails");
    AtomicInteger runs = new AtomicInteger();
    Handler<String, String> failing = (body, ctx) -> {
      runs.incrementAndGet();
      throw new IllegalStateException("exit 3");
    };
    for (int i = 0; i < 5; i++) {
      MainLoop.builder("w", jobs, failing).config(config).ticker(ticker).build().run(1);
      advance(Duration.ofMinutes(10)); // past any backoff
    }

    assertThat(runs.get()).isEqualTo(2);
    assertThat(jobs.deadLetters()).singleElement().satisfies(d -> {
      assertThat(d.attempts()).isEqualTo(2);
      assertThat(d.reason()).contains("attempt 2 of 2").contains("exit 3");
    });
    jobs.close();
  }

  @Test
  void aShutdownDuringTheLastAttemptHandsTheMessageBackUncharged() {
    InMemoryMailbox<String, String> jobs = InMemoryMailbox.<String, String>builder("jobs")
        .clock(clock).maxAttempts(1).build();
    jobs.send("long job");
    AtomicReference<MainLoop<String, String>> self = new AtomicReference<>();
    MainLoop<String, String> first = MainLoop.builder("w1", jobs, (String body, WorkContext ctx) -> {
      self.get().shutdown(); // SIGTERM while the only attempt runs
      throw WorkStoppedException.because(ctx);
    }).config(config).ticker(ticker).listener(events).build();
    self.set(first);
    first.run();

    List<String> seen = new CopyOnWriteArrayList<>();
    MainLoop.builder("w2", jobs, (String body, WorkContext ctx) -> {
      seen.add("attempt " + ctx.attempt() + " of " + ctx.maxAttempts() + ", delivery "
          + ctx.deliveryCount());
      return "done";
    }).config(config).ticker(ticker).build().run(1);

    assertThat(seen).containsExactly("attempt 1 of 1, delivery 2");
    assertThat(jobs.approximateCount()).isZero();
    assertThat(jobs.deadLetters()).isEmpty();
    assertThat(events.log).containsExactly("received", "handedBack");
    jobs.close();
  }

  /** Jobs whose store is reported unavailable while {@code down} is set. */
  private static class FlakyStore extends dev.tether.mailbox.ForwardingMailbox<String, String> {
    final java.util.concurrent.atomic.AtomicBoolean down = new java.util.concurrent.atomic.AtomicBoolean();

    FlakyStore(dev.tether.mailbox.Mailbox<String, String> jobs) {
      super("jobs", jobs);
    }

    @Override
    public boolean isAvailable() {
      return !down.get();
    }
  }

  /** A handler that checkpoints, then meets an unreachable store (which the mailbox sees too). */
  private static Handler<String, String> stoppedByTheStore(FlakyStore store, boolean storeSeesIt) {
    return (String body, WorkContext ctx) -> {
      ctx.checkpoint("step 3");
      store.down.set(storeSeesIt);
      // the next checkpoint meets a database restart; the handler wraps what it got
      throw new IllegalStateException("render failed", new dev.tether.mailbox.MailboxConnectionException(
          "checkpoint failed: cannot reach the database"));
    };
  }

  @Test
  void aHandlerStoppedByAnUnreachableStoreHasItsMessageHandedBackUncharged() {
    InMemoryMailbox<String, String> inner = InMemoryMailbox.<String, String>builder("jobs")
        .clock(clock).maxAttempts(1).build();
    FlakyStore jobs = new FlakyStore(inner);
    jobs.send("long job");
    MainLoop.builder("w1", jobs, stoppedByTheStore(jobs, true)).config(config).ticker(ticker)
        .listener(events).build().run(1);

    jobs.down.set(false);
    List<String> seen = new CopyOnWriteArrayList<>();
    MainLoop.builder("w2", jobs, (String body, WorkContext ctx) -> {
      seen.add("attempt " + ctx.attempt() + " of " + ctx.maxAttempts() + ", from "
          + ctx.lastCheckpointAsString().orElse("the start"));
      return "done";
    }).config(config).ticker(ticker).build().run(1);

    assertThat(seen).containsExactly("attempt 1 of 1, from step 3");
    assertThat(inner.deadLetters()).isEmpty();
    assertThat(events.log).containsExactly("received", "handedBack");
    inner.close();
  }

  @Test
  void aHandlerStoppedByAStoreStillUnreachableForTheHandBackFailsAsAnyOther() {
    InMemoryMailbox<String, String> inner = InMemoryMailbox.<String, String>builder("jobs")
        .clock(clock).maxAttempts(1).build();
    FlakyStore jobs = new FlakyStore(inner) {
      @Override
      @SuppressWarnings("unchecked")
      public List<Message<String, String>> receive(int max, Duration visibility, Duration wait) {
        // the hand-back meets the outage too
        return super.receive(max, visibility, wait).stream().map(m -> (Message<String, String>)
            java.lang.reflect.Proxy.newProxyInstance(Message.class.getClassLoader(),
                new Class<?>[] {Message.class}, (proxy, method, args) -> {
                  if (method.getName().equals("handBack")) {
                    throw new dev.tether.mailbox.MailboxConnectionException("still unreachable");
                  }
                  try {
                    return method.invoke(m, args);
                  } catch (java.lang.reflect.InvocationTargetException e) {
                    throw e.getCause();
                  }
                })).toList();
      }
    };
    jobs.send("job");
    MainLoop.builder("w1", jobs, stoppedByTheStore(jobs, true)).config(config).ticker(ticker)
        .listener(events).build().run(1);

    assertThat(events.log).containsExactly("received", "failed");
    assertThat(inner.deadLetters()).hasSize(1);
    inner.close();
  }

  @Test
  void aHandlerThatMeetsAnUnreachableStoreEveryTimeOrAnotherStoreIsCharged() {
    // another store the handler writes to: its own store works, so the attempt is charged
    InMemoryMailbox<String, String> inner = InMemoryMailbox.<String, String>builder("jobs")
        .clock(clock).maxAttempts(1).build();
    FlakyStore jobs = new FlakyStore(inner);
    jobs.send("job");
    MainLoop.builder("w1", jobs, stoppedByTheStore(jobs, false)).config(config).ticker(ticker)
        .listener(events).build().run(1);
    assertThat(inner.deadLetters()).hasSize(1);

    // its own store, every time: uncharged only for a bounded number of deliveries
    InMemoryMailbox<String, String> inner2 = InMemoryMailbox.<String, String>builder("jobs")
        .clock(clock).maxAttempts(2).build();
    FlakyStore jobs2 = new FlakyStore(inner2);
    jobs2.send("poison");
    for (int i = 0; i < 3 * MainLoop.MAX_UNCHARGED_DELIVERIES && inner2.deadLetters().isEmpty(); i++) {
      clock.advance(Duration.ofMinutes(10)); // past any retry delay
      MainLoop.builder("w2", jobs2, stoppedByTheStore(jobs2, true)).config(config).ticker(ticker)
          .build().run(1);
    }
    assertThat(inner2.deadLetters()).hasSize(1);
    inner.close();
    inner2.close();
  }

  @Test
  void aLoopWaitingOutAStoreOutageKeepsBeating() throws Exception {
    // the backoff after failed receives grows to 30 s; a watchdog must not take it for a stall
    InMemoryMailbox<String, String> inner = InMemoryMailbox.<String, String>builder("jobs").clock(clock).build();
    AtomicInteger receives = new AtomicInteger();
    dev.tether.mailbox.Mailbox<String, String> down = new dev.tether.mailbox.ForwardingMailbox<>("jobs", inner) {
      @Override
      public List<Message<String, String>> receive(int max, Duration visibility, Duration wait) {
        receives.incrementAndGet();
        throw new dev.tether.mailbox.MailboxConnectionException("cannot reach the database");
      }
    };
    MainLoop<String, String> loop = MainLoop.builder("w", down, (String body, WorkContext ctx) -> "x")
        .config(config).ticker(ticker).build();
    Thread t = new Thread(loop::run, "outage-loop");
    t.start();
    try {
      // the failures until the backoff is 8 s and more, advancing the ticker one second at a time
      for (int s = 0; s < 40; s++) {
        ticker.advance(Duration.ofSeconds(1));
        await().atMost(Duration.ofSeconds(10)).until(() -> loop.heartbeat().elapsed().compareTo(Duration.ofSeconds(2)) < 0);
      }
      assertThat(receives.get()).isBetween(4, 8); // 1 + 2 + 4 + 8 + 16 s of backoff fit in 40 s
    } finally {
      loop.shutdown();
      t.join(10_000);
      inner.close();
    }
  }

  @Test
  void aRequestDeadLetteredByTheLoopIsAnsweredWithAnErrorReply() {
    InMemoryMailbox<String, String> jobs = InMemoryMailbox.<String, String>builder("jobs")
        .clock(clock).maxAttempts(1).build();
    String id = jobs.send("question", replies);

    MainLoop.builder("w", jobs, (String body, WorkContext ctx) -> {
      throw new IllegalStateException("no answer");
    }).config(config).ticker(ticker).build().run(1);

    Message<String, String> answer = replies.receive(1, Duration.ofSeconds(10), Duration.ZERO).get(0);
    assertThat(answer.errorReply()).hasValueSatisfying(e -> {
      assertThat(e.requestId()).isEqualTo(id);
      assertThat(e.reason()).contains("no answer");
      assertThat(e.attempts()).isEqualTo(1);
    });
    jobs.close();
  }

  @Test
  void aHandlerResumesFromTheCheckpointOfAnEarlierDelivery() {
    requests.send("steps");
    List<String> log = new CopyOnWriteArrayList<>();
    Handler<String, String> stepper = (body, ctx) -> {
      int start = ctx.lastCheckpointAsString().map(Integer::parseInt).orElse(0);
      log.add("start at " + start);
      for (int step = start + 1; step <= 4; step++) {
        ctx.checkpoint(Integer.toString(step));
        if (step == 2 && start == 0) {
          throw new IllegalStateException("crash after step 2");
        }
      }
      return "done";
    };
    loop(stepper).run(1);
    advance(Duration.ofMinutes(1)); // past the backoff
    loop(stepper).run(1);

    assertThat(log).containsExactly("start at 0", "start at 2");
    assertThat(requests.approximateCount()).isZero();
  }

  @Test
  void aHandlerPastItsDeadlineIsInterruptedAndTheAttemptFails() throws Exception {
    requests.send("hangs");
    MainLoopConfig cfg = config.toBuilder().deadline(Duration.ofMillis(200)).build();
    AtomicReference<Throwable> seen = new AtomicReference<>();
    java.util.concurrent.CountDownLatch never = new java.util.concurrent.CountDownLatch(1);
    MainLoop<String, String> loop = MainLoop.builder("w", requests, (String body, WorkContext ctx) -> {
      try {
        never.await(1, java.util.concurrent.TimeUnit.MINUTES); // ignores the deadline
        return "late";
      } catch (InterruptedException e) {
        seen.set(e);
        throw e;
      }
    }).config(cfg).ticker(dev.tether.Ticker.system()).listener(events).build();

    loop.run(1);

    assertThat(seen.get()).isInstanceOf(InterruptedException.class);
    assertThat(Thread.currentThread().isInterrupted()).as("the loop's thread is not left interrupted").isFalse();
    assertThat(events.log).containsExactly("received", "failed");
    assertThat(requests.receive(1, Duration.ofSeconds(10), Duration.ZERO)).as("retried after backoff").isEmpty();
    advance(Duration.ofSeconds(1));
    assertThat(requests.receive(1, Duration.ofSeconds(10), Duration.ZERO))
        .singleElement().extracting(Message::attempt).isEqualTo(2);
  }

  @Test
  void pastTheDeadlineBeatsNoLongerExtendTheLease() {
    requests.send("overruns");
    MainLoopConfig cfg = config.toBuilder().deadline(Duration.ofMinutes(30)).build();
    // With a settable ticker the deadline passes by hand; the real-time interrupt is far away.
    AtomicInteger extensions = new AtomicInteger();
    MainLoop.builder("w", requests, (String body, WorkContext ctx) -> {
      for (int i = 0; i < 5; i++) {
        advance(Duration.ofSeconds(2));
        ctx.beat(); // extends: well within the deadline
      }
      ticker.advance(Duration.ofMinutes(30)); // the deadline passes (the mailbox clock does not move)
      assertThat(ctx.shouldStop()).isTrue();
      ctx.beat(); // would be due, but the work is past its deadline
      return "done";
    }).config(cfg).ticker(ticker).extenderListener(new dev.tether.LeaseExtender.Listener() {
      @Override
      public void extended(Message<?, ?> message, Duration extension) {
        extensions.incrementAndGet();
      }
    }).build().run(1);

    assertThat(extensions.get()).isEqualTo(5);
  }

  private static final class RecordingListener implements MainLoop.Listener {
    final List<String> log = new CopyOnWriteArrayList<>();

    @Override
    public void received(Message<?, ?> message) {
      log.add("received");
    }

    @Override
    public void completed(Message<?, ?> message, Duration took) {
      log.add("completed");
    }

    @Override
    public void failed(
        Message<?, ?> message, Exception error, DeadLetterPolicy.Decision d, Duration took) {
      log.add("failed");
    }

    @Override
    public void leaseLost(Message<?, ?> message) {
      log.add("leaseLost");
    }

    @Override
    public void handedBack(Message<?, ?> message) {
      log.add("handedBack");
    }

    @Override
    public void cancelled(Message<?, ?> message) {
      log.add("cancelled");
    }
  }
}
