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
}
