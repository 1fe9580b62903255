package dev.tether.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.LeaseExtender;
import dev.tether.loop.MainLoop;
import dev.tether.loop.WorkStoppedException;
import dev.tether.mailbox.Message;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Agent runs on a MainLoop over each backend (in memory, SQLite, PostgreSQL), with the scripted
 * model and settable time: leases kept by tool beats, lost by hangs, runs stopped and resumed.
 */
abstract class DurableAgentCompatibilityTest {
  private final Harness h = new Harness(kind());
  private final List<AgentRun> runs = new CopyOnWriteArrayList<>();
  private final ConcurrentHashMap<String, Set<String>> seenBy = new ConcurrentHashMap<>();

  /** The backend of the queues. */
  protected abstract Queues.Kind kind();

  @AfterEach
  void close() {
    h.close();
  }

  @Test
  void aRunOfSlowToolCallsKeepsItsLeasePastTheVisibilityTimeout() {
    // six tool calls of 3 s each: 18 s of work on a 10 s visibility timeout, extended by beats
    AtomicReference<List<Message<String, String>>> seenByOthers = new AtomicReference<>();
    h.tool("step", (request, memoryId) -> {
      h.advance(Duration.ofSeconds(3));
      if (h.toolsRun.size() == 6) {
        seenByOthers.set(h.requests.receive(1, Duration.ofSeconds(30), Duration.ZERO));
      }
      return "ok";
    });
    ScriptedChatModel model = ScriptedChatModel.script()
        .callTool("step", "{}").callTool("step", "{}").callTool("step", "{}")
        .callTool("step", "{}").callTool("step", "{}").callTool("step", "{}")
        .answer(r -> "done: " + ScriptedChatModel.task(r))
        .build();
    TetherAgents agents = TetherAgents.create();
    Harness.Worker worker = h.worker(agents, model);
    Set<String> extended = ConcurrentHashMap.newKeySet();
    List<Duration> extensions = new CopyOnWriteArrayList<>();
    h.requests.send("refactor the mailbox", h.replies);

    h.loop("worker", Harness.handler(agents, worker, runs), new LeaseExtender.Listener() {
      @Override
      public void extended(Message<?, ?> message, Duration extension) {
        extended.add(message.id());
        extensions.add(extension);
      }
    }).run(1);

    assertThat(h.toolsRun).hasSize(6);
    assertThat(seenByOthers.get()).as("nobody else could take the item mid-run").isEmpty();
    assertThat(extensions).as("extended after each slow tool").hasSizeGreaterThanOrEqualTo(6);
    assertThat(h.events).singleElement().asString().contains("completed");
    assertThat(h.replyBodies()).containsExactly("done: refactor the mailbox");
    assertThat(h.requests.approximateCount()).isZero();
    assertThat(model.answeredSteps()).containsExactly(0, 1, 2, 3, 4, 5, 6);
    assertThat(runs.get(0).toolCalls()).isEqualTo(6);
    assertThat(runs.get(0).modelCalls()).isEqualTo(7);
  }

  @Test
  void aHangingToolStopsTheBeatsSoTheLeaseExpiresAndTheItemIsRedelivered() throws Exception {
    CountDownLatch hanging = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    h.tool("fetch", (request, memoryId) -> {
      if (h.toolsRun.size() == 1) { // the first delivery's call hangs
        hanging.countDown();
        await(release);
      }
      return "fetched";
    });
    ScriptedChatModel model = ScriptedChatModel.script()
        .callTool("fetch", "{}")
        .answer("done")
        .build();
    TetherAgents agents = TetherAgents.create();
    Harness.Worker worker = h.worker(agents, model);
    h.requests.send("fetch it", h.replies);
    MainLoop<String, String> first = h.loop("first", Harness.handler(agents, worker, runs));
    Thread firstThread = new Thread(() -> first.run(1), "first-loop");
    firstThread.start();
    assertThat(hanging.await(10, TimeUnit.SECONDS)).isTrue();

    h.advance(Duration.ofSeconds(11)); // no beat for longer than the visibility timeout
    h.loop("second", Harness.handler(agents, worker, runs)).run(1);

    assertThat(h.events).containsExactly("second: completed " + runs.get(1).context().messageId().get());
    assertThat(runs.get(1).context().deliveryCount()).isEqualTo(2);
    assertThat(runs.get(1).resumed()).as("resumed from the first delivery's checkpoint").isTrue();
    assertThat(h.replyBodies()).containsExactly("done");

    release.countDown(); // the hung tool returns, long after its lease was lost
    firstThread.join(10_000);
    assertThat(firstThread.isAlive()).isFalse();
    assertThat(h.events).last().asString().startsWith("first: leaseLost");
    assertThat(model.answeredSteps())
        .as("step 0 by the first delivery, step 1 by the second; the first made no further call")
        .containsExactly(0, 1);
    assertThat(h.toolsRun).containsExactly("fetch");
  }

  @Test
  void twoLoopsSharingOneAiServiceEachExtendOnlyTheirOwnItem() throws Exception {
    // both runs are mid-tool at once; each tool step moves time by 4 s (12 s in all, visibility
    // 10 s), so an item whose beats went elsewhere would lose its lease
    CyclicBarrier together = new CyclicBarrier(2, () -> h.advance(Duration.ofSeconds(4)));
    h.tool("step", (request, memoryId) -> {
      try {
        together.await(10, TimeUnit.SECONDS);
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
      return "ok";
    });
    ScriptedChatModel model = ScriptedChatModel.script()
        .callTool("step", "{}").callTool("step", "{}").callTool("step", "{}")
        .answer(r -> "done: " + ScriptedChatModel.task(r))
        .build();
    TetherAgents agents = TetherAgents.builder()
        .listener(new AgentListener() {
          @Override
          public void toolStarting(AgentRun run, dev.langchain4j.agent.tool.ToolExecutionRequest r) {
            seenBy.computeIfAbsent(Thread.currentThread().getName(), k -> ConcurrentHashMap.newKeySet())
                .add(run.context().messageId().orElseThrow());
          }
        })
        .build();
    Harness.Worker shared = h.worker(agents, model);
    String a = h.requests.send("task a", h.replies);
    String b = h.requests.send("task b", h.replies);
    ConcurrentHashMap<String, Set<String>> extendedBy = new ConcurrentHashMap<>();
    Thread[] threads = new Thread[2];
    for (int i = 0; i < 2; i++) {
      String name = "loop-" + i;
      MainLoop<String, String> loop = h.loop(name, Harness.handler(agents, shared, runs),
          new LeaseExtender.Listener() {
            @Override
            public void extended(Message<?, ?> message, Duration extension) {
              extendedBy.computeIfAbsent(name, k -> ConcurrentHashMap.newKeySet()).add(message.id());
            }
          });
      threads[i] = new Thread(() -> loop.run(1), name);
    }
    for (Thread t : threads) {
      t.start();
    }
    for (Thread t : threads) {
      t.join(20_000);
    }

    assertThat(h.events).hasSize(2).allMatch(e -> e.contains("completed"));
    assertThat(h.replyBodies()).containsExactlyInAnyOrder("done: task a", "done: task b");
    assertThat(extendedBy.keySet()).containsExactlyInAnyOrder("loop-0", "loop-1");
    assertThat(extendedBy.get("loop-0")).hasSize(1);
    assertThat(extendedBy.get("loop-1")).hasSize(1);
    assertThat(extendedBy.get("loop-0")).doesNotContainAnyElementsOf(extendedBy.get("loop-1"));
    assertThat(Set.of(extendedBy.get("loop-0").iterator().next(),
        extendedBy.get("loop-1").iterator().next())).containsExactlyInAnyOrder(a, b);
    // each loop's thread ran tools only for the item its own extender extended
    assertThat(seenBy.get("loop-0")).isEqualTo(extendedBy.get("loop-0"));
    assertThat(seenBy.get("loop-1")).isEqualTo(extendedBy.get("loop-1"));
  }

  @Test
  void aRunWhoseLeaseIsLostMakesNoFurtherToolOrModelCall() {
    h.tool("first", (request, memoryId) -> "one");
    h.tool("second", (request, memoryId) -> {
      // meanwhile the lease ran out without a beat and another worker took the item over
      h.advance(Duration.ofSeconds(11));
      h.requests.receive(1, Duration.ofSeconds(60), Duration.ZERO);
      return "two";
    });
    h.tool("third", (request, memoryId) -> "three");
    ScriptedChatModel model = ScriptedChatModel.script()
        .callTool("first", "{}").callTool("second", "{}").callTool("third", "{}")
        .answer("done")
        .build();
    List<WorkStoppedException> stops = new CopyOnWriteArrayList<>();
    TetherAgents agents = TetherAgents.builder()
        .listener(new AgentListener() {
          @Override
          public void stopped(AgentRun run, WorkStoppedException reason) {
            stops.add(reason);
          }
        })
        .build();
    Harness.Worker worker = h.worker(agents, model);
    AtomicReference<Exception> failure = new AtomicReference<>();
    h.requests.send("three steps", h.replies);

    h.loop("worker", (task, ctx) -> {
      try (AgentRun run = agents.bind(ctx)) {
        runs.add(run);
        return worker.work(task);
      } catch (Exception e) {
        failure.set(e);
        throw e;
      }
    }).run(1);

    assertThat(failure.get()).isInstanceOf(WorkStoppedException.class);
    assertThat(((WorkStoppedException) failure.get()).reason())
        .isEqualTo(WorkStoppedException.Reason.LEASE_LOST);
    assertThat(h.toolsRun).containsExactly("first", "second");
    assertThat(model.answeredSteps()).containsExactly(0, 1);
    assertThat(runs.get(0).modelCalls()).isEqualTo(2);
    assertThat(h.events).singleElement().asString().startsWith("worker: leaseLost");
    assertThat(h.replyBodies()).isEmpty();
  }

  @Test
  void aRunStoppedAfterToolCallKResumesAtKPlusOneWithItsMemory() {
    // the worker is asked to stop while tool 2 of 4 runs; its next model request is refused, the
    // item handed back (not charged); the next delivery continues with tool 3
    AtomicReference<MainLoop<String, String>> firstLoop = new AtomicReference<>();
    for (String name : List.of("search", "read", "edit", "test")) {
      h.tool(name, (request, memoryId) -> {
        if (name.equals("read") && h.toolsRun.size() == 2) {
          firstLoop.get().shutdown();
        }
        return name + " ok";
      });
    }
    ScriptedChatModel model = ScriptedChatModel.script()
        .callTool("search", "{}").callTool("read", "{}").callTool("edit", "{}").callTool("test", "{}")
        .answer(r -> "done: " + ScriptedChatModel.task(r))
        .build();
    TetherAgents agents = TetherAgents.builder().stopOnShutdown(true).build();
    Harness.Worker worker = h.worker(agents, model);
    h.requests.send("fix issue 18", h.replies);

    firstLoop.set(h.loop("first", Harness.handler(agents, worker, runs)));
    firstLoop.get().run(1);

    assertThat(h.events).singleElement().asString().startsWith("first: handedBack");
    assertThat(model.answeredSteps()).containsExactly(0, 1);
    assertThat(runs.get(0).resumed()).isFalse();

    h.loop("second", Harness.handler(agents, worker, runs)).run(1);

    AgentRun second = runs.get(1);
    assertThat(second.resumed()).isTrue();
    assertThat(second.context().deliveryCount()).isEqualTo(2);
    assertThat(second.context().attempt()).as("the hand-back was not charged").isEqualTo(1);
    assertThat(model.answeredSteps()).as("no step asked twice").containsExactly(0, 1, 2, 3, 4);
    assertThat(second.modelCalls()).isEqualTo(3);
    assertThat(h.toolsRun).containsExactly("search", "read", "edit", "test");
    assertThat(h.replyBodies()).containsExactly("done: fix issue 18");
    assertThat(h.events).last().asString().startsWith("second: completed");
  }

  private static void await(CountDownLatch latch) {
    try {
      if (!latch.await(20, TimeUnit.SECONDS)) {
        throw new IllegalStateException("not released");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
