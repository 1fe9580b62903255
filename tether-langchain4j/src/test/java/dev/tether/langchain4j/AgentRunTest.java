package dev.tether.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.memory.chat.MessageWindowChatMemory;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.tool.ToolExecutor;
import dev.tether.loop.WorkStoppedException;
import dev.tether.loop.WorkStoppedException.Reason;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** One run on a hand-built delivery: beats, refusals by reason, binding rules. */
class AgentRunTest {
  interface Worker {
    String work(String task);
  }

  private Delivery d = new Delivery();
  private final List<String> toolsRun = new CopyOnWriteArrayList<>();
  private final Map<ToolSpecification, ToolExecutor> tools = new LinkedHashMap<>();
  private final List<WorkStoppedException> stops = new CopyOnWriteArrayList<>();
  private final AgentListener recordStops = new AgentListener() {
    @Override
    public void stopped(AgentRun run, WorkStoppedException reason) {
      stops.add(reason);
    }
  };

  @AfterEach
  void close() {
    d.close();
  }

  private void tool(String name, Consumer<String> body) {
    tools.put(ToolSpecification.builder().name(name).description(name).build(), (request, memoryId) -> {
      toolsRun.add(name);
      body.accept(name);
      return name + " ok";
    });
  }

  /** An attached service with no Tether memory, so refusals come from the hooks and the model. */
  private Worker worker(TetherAgents agents, ScriptedChatModel model) {
    return agents.attach(AiServices.builder(Worker.class), model).tools(tools).build();
  }

  /** An attached service with the tools and Tether's memory store. */
  private Worker withMemory(TetherAgents agents, ScriptedChatModel model) {
    return agents.attach(AiServices.builder(Worker.class), model)
        .tools(tools)
        .chatMemory(MessageWindowChatMemory.builder()
            .maxMessages(100).chatMemoryStore(agents.memoryStore()).build())
        .build();
  }

  private Throwable run(TetherAgents agents, Worker worker) {
    try (AgentRun run = agents.bind(d.context)) {
      worker.work("task");
      return null;
    } catch (RuntimeException e) {
      return e;
    }
  }

  @Test
  void everyToolCallAndModelCallBeatsBeforeAndAfter() {
    tool("a", n -> {});
    tool("b", n -> {});
    ScriptedChatModel model = ScriptedChatModel.script()
        .callTool("a", "{}").callTool("b", "{}").answer("done").build();
    TetherAgents agents = TetherAgents.create();
    d.beats.set(0);

    assertThat(run(agents, worker(agents, model))).isNull();

    // 3 model calls and 2 tool calls, each beaten before and after
    assertThat(d.beats.get()).isEqualTo(3 * 2 + 2 * 2);
  }

  @Test
  void aCancelledItemRefusesItsNextToolCallWithCancelled() {
    tool("a", n -> d.attachment.markCancelled());
    tool("b", n -> {});
    ScriptedChatModel model = ScriptedChatModel.script()
        .callTools(new String[] {"a", "{}"}, new String[] {"b", "{}"})
        .answer("done")
        .build();
    TetherAgents agents = TetherAgents.builder().listener(recordStops).build();

    Throwable failure = run(agents, worker(agents, model));

    assertThat(failure).isInstanceOf(WorkStoppedException.class);
    assertThat(((WorkStoppedException) failure).reason()).isEqualTo(Reason.CANCELLED);
    assertThat(failure).hasMessageContaining("tool 'b'");
    assertThat(toolsRun).containsExactly("a");
    assertThat(model.answeredSteps()).containsExactly(0);
    assertThat(stops).singleElement().extracting(WorkStoppedException::reason)
        .isEqualTo(Reason.CANCELLED);
  }

  @Test
  void aToolThatFinishedBeforeItsRoundWasCutShortKeepsItsResultInTheCheckpoint() {
    // LangChain4j adds a round's results to the memory once every tool of the round ran: "charge"
    // ran, "email" was refused; the resumed run must see charge's result, not "interrupted"
    tool("charge", n -> d.attachment.markCancelled());
    tool("email", n -> {});
    ScriptedChatModel model = ScriptedChatModel.script()
        .callTools(new String[] {"charge", "{}"}, new String[] {"email", "{}"})
        .answer("done")
        .build();
    TetherAgents agents = TetherAgents.create();
    Worker withMemory = withMemory(agents, model);

    assertThat(run(agents, withMemory)).isInstanceOf(WorkStoppedException.class);
    assertThat(toolsRun).containsExactly("charge");

    byte[] checkpoint = d.context.lastCheckpoint().orElseThrow();
    d.close();
    d = new Delivery(null, checkpoint); // the next delivery
    try (AgentRun resumed = agents.bind(d.context)) {
      List<dev.langchain4j.data.message.ChatMessage> messages =
          agents.memoryStore().getMessages("default");
      assertThat(messages).filteredOn(m -> m instanceof ToolExecutionResultMessage)
          .extracting(m -> ((ToolExecutionResultMessage) m).toolName() + ": "
              + ((ToolExecutionResultMessage) m).text())
          .containsExactly("charge: charge ok", "email: " + AgentRun.INTERRUPTED_TOOL_RESULT);
      assertThat(resumed.resumed()).isTrue();
    }
  }

  @Test
  void aDeliveryResumingAConversationThatEndedInAnAnswerIsGivenThatAnswer() {
    tool("a", n -> {});
    ScriptedChatModel model = ScriptedChatModel.script().callTool("a", "{}").answer("done").build();
    TetherAgents agents = TetherAgents.create();
    Worker withMemory = withMemory(agents, model);
    try (AgentRun first = agents.bind(d.context)) {
      assertThat(first.answered()).isEmpty(); // nothing to resume
      assertThat(withMemory.work("task")).isEqualTo("done");
      assertThat(first.answered()).as("what this delivery resumed, not what it got").isEmpty();
    }
    // the delivery ended before its acknowledgement: the next one has the answer
    byte[] checkpoint = d.context.lastCheckpoint().orElseThrow();
    d.close();
    d = new Delivery(null, checkpoint);
    try (AgentRun second = agents.bind(d.context)) {
      assertThat(second.answered()).map(dev.langchain4j.data.message.AiMessage::text).contains("done");
    }
    assertThat(model.answeredSteps()).containsExactly(0, 1);
  }

  @Test
  void aLostLeaseRefusesTheNextModelRequestWithLeaseLost() {
    tool("a", n -> d.attachment.markLeaseLost());
    ScriptedChatModel model = ScriptedChatModel.script()
        .callTool("a", "{}").answer("done").build();
    TetherAgents agents = TetherAgents.create();

    Throwable failure = run(agents, worker(agents, model));

    assertThat(failure).isInstanceOf(WorkStoppedException.class)
        .hasMessageContaining("model request");
    assertThat(((WorkStoppedException) failure).reason()).isEqualTo(Reason.LEASE_LOST);
    assertThat(model.answeredSteps()).containsExactly(0);
  }

  @Test
  void aToolThatOverranTheLeaseGoesOnWhenNobodyTookTheItemOver() {
    // the receipt handle stays valid until a takeover: the beat after the tool extends the lease
    tool("slow", n -> d.advance(Duration.ofSeconds(11)));
    ScriptedChatModel model = ScriptedChatModel.script()
        .callTool("slow", "{}").answer("done").build();
    TetherAgents agents = TetherAgents.create();

    assertThat(run(agents, worker(agents, model))).isNull();

    assertThat(model.answeredSteps()).containsExactly(0, 1);
    assertThat(d.context.isLeaseLost()).isFalse();
  }

  @Test
  void aTakeoverIsSeenByTheLeaseCheckBeforeTheModelRequest() {
    // taken over between two beats (no extension due yet): only the store knows
    tool("a", n -> {
      d.advance(Duration.ofMillis(500));
      d.clock.advance(Duration.ofSeconds(10)); // the store's clock says the lease expired
      d.mailbox.receive(1, Duration.ofSeconds(60), Duration.ZERO); // and another worker took it
    });
    ScriptedChatModel model = ScriptedChatModel.script()
        .callTool("a", "{}").answer("done").build();
    TetherAgents agents = TetherAgents.create();

    Throwable failure = run(agents, worker(agents, model));

    assertThat(((WorkStoppedException) failure).reason()).isEqualTo(Reason.LEASE_LOST);
    assertThat(model.answeredSteps()).containsExactly(0);
  }

  @Test
  void aPassedDeadlineRefusesTheNextCall() {
    d.close();
    d = new Delivery(Duration.ofSeconds(5), null);
    tool("a", n -> d.advance(Duration.ofSeconds(6)));
    ScriptedChatModel model = ScriptedChatModel.script()
        .callTool("a", "{}").answer("done").build();
    TetherAgents agents = TetherAgents.create();

    Throwable failure = run(agents, worker(agents, model));

    assertThat(((WorkStoppedException) failure).reason()).isEqualTo(Reason.DEADLINE);
  }

  @Test
  void aShutdownLetsTheRunFinishUnlessStopOnShutdownIsSet() {
    tool("a", n -> d.shutdown.set(true));
    ScriptedChatModel draining = ScriptedChatModel.script()
        .callTool("a", "{}").answer("done").build();
    TetherAgents agents = TetherAgents.create();
    assertThat(run(agents, worker(agents, draining))).isNull();
    assertThat(draining.answeredSteps()).containsExactly(0, 1);

    d.shutdown.set(false);
    ScriptedChatModel stopping = ScriptedChatModel.script()
        .callTool("a", "{}").answer("done").build();
    TetherAgents stopOnShutdown = TetherAgents.builder().stopOnShutdown(true).build();
    Throwable failure = run(stopOnShutdown, worker(stopOnShutdown, stopping));
    assertThat(((WorkStoppedException) failure).reason()).isEqualTo(Reason.SHUTDOWN);
    assertThat(stopping.answeredSteps()).containsExactly(0);
  }

  @Test
  void aCallWithoutABoundContextFailsBeforeTheModelIsAsked() {
    ScriptedChatModel model = ScriptedChatModel.script().answer("done").build();
    TetherAgents agents = TetherAgents.create();
    Worker worker = worker(agents, model);

    assertThatThrownBy(() -> worker.work("task"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("TetherAgents.bind(context)");
    assertThat(model.answeredSteps()).isEmpty();
  }

  @Test
  void oneThreadBindsOneRunAtATime() {
    TetherAgents agents = TetherAgents.create();
    try (AgentRun run = agents.bind(d.context)) {
      assertThat(agents.currentRun()).containsSame(run);
      assertThatThrownBy(() -> agents.bind(d.context))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("already bound");
    }
    assertThat(agents.currentRun()).isEmpty();
    agents.bind(d.context).close(); // free again
  }

  @Test
  void aRunIsClosedOnTheThreadThatBoundIt() throws Exception {
    TetherAgents agents = TetherAgents.create();
    AgentRun run = agents.bind(d.context);
    AtomicReference<Throwable> elsewhere = new AtomicReference<>();
    Thread t = new Thread(() -> {
      try {
        run.close();
      } catch (Throwable e) {
        elsewhere.set(e);
      }
    });
    t.start();
    t.join();
    assertThat(elsewhere.get()).isInstanceOf(IllegalStateException.class);
    run.close();
    run.close(); // idempotent
    assertThat(run.isClosed()).isTrue();
  }

  @Test
  void toolsRunOnAnExecutorBeatTheItemOfTheCallThatAskedForThem() {
    ExecutorService pool = Executors.newFixedThreadPool(2, r -> new Thread(r, "tool-pool"));
    try {
      List<String> seen = new CopyOnWriteArrayList<>();
      tool("a", n -> {});
      tool("b", n -> {});
      ScriptedChatModel model = ScriptedChatModel.script()
          .callTools(new String[] {"a", "{}"}, new String[] {"b", "{}"})
          .answer("done")
          .build();
      TetherAgents agents = TetherAgents.builder().listener(new AgentListener() {
        @Override
        public void toolStarting(AgentRun run, ToolExecutionRequest request) {
          seen.add(Thread.currentThread().getName() + " " + run.context().messageId().orElseThrow());
        }
      }).build();
      Worker worker = agents.attach(AiServices.builder(Worker.class), model)
          .tools(tools)
          .executeToolsConcurrently(pool)
          .build();
      d.beats.set(0);

      assertThat(run(agents, worker)).isNull();

      assertThat(seen).hasSize(2).allMatch(s -> s.equals("tool-pool " + d.message.id()));
      assertThat(d.beats.get()).isEqualTo(2 * 2 + 2 * 2);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aToolRunOnAnExecutorFindsItsRunWhileItRunsAndOnlyThen() throws Exception {
    ExecutorService pool = Executors.newSingleThreadExecutor(r -> new Thread(r, "tool-pool"));
    try {
      TetherAgents agents = TetherAgents.create();
      List<String> found = new CopyOnWriteArrayList<>();
      Consumer<String> look = n -> found.add(Thread.currentThread().getName() + " "
          + agents.currentRun().map(r -> r.context().messageId().orElseThrow()).orElse("none"));
      tool("a", look);
      tool("b", look); // LangChain4j runs a round's tools on the executor when there are several
      ScriptedChatModel model = ScriptedChatModel.script()
          .callTools(new String[] {"a", "{}"}, new String[] {"b", "{}"})
          .answer("done")
          .build();
      Worker worker = agents.attach(AiServices.builder(Worker.class), model)
          .tools(tools)
          .executeToolsConcurrently(pool)
          .build();

      assertThat(run(agents, worker)).isNull();

      assertThat(found).containsExactly("tool-pool " + d.message.id(), "tool-pool " + d.message.id());
      assertThat(pool.submit(() -> agents.currentRun().isPresent()).get())
          .as("the executor's thread is unbound after the tool").isFalse();
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * Runs a one-tool call on a service whose builder {@code replace} changed after attach; asserts
   * that the next model request was refused naming {@code hook}.
   */
  private void assertReplacedHookIsCaught(
      java.util.function.UnaryOperator<AiServices<Worker>> replace, String hook) {
    tool("a", n -> {});
    ScriptedChatModel model = ScriptedChatModel.script()
        .callTool("a", "{}").answer("done").build();
    TetherAgents agents = TetherAgents.create();
    Worker worker = replace.apply(agents.attach(AiServices.builder(Worker.class), model).tools(tools))
        .build();

    Throwable failure = run(agents, worker);

    assertThat(failure).isInstanceOf(IllegalStateException.class).hasMessageContaining(hook);
    assertThat(model.answeredSteps()).containsExactly(0);
  }

  @Test
  void replacingTheToolHooksAfterAttachIsCaughtAtTheNextModelRequest() {
    assertReplacedHookIsCaught(b -> b.beforeToolExecution(before -> {}), "beforeToolExecution");
  }

  @Test
  void replacingTheAfterToolHookAfterAttachIsCaughtAtTheNextModelRequest() {
    assertReplacedHookIsCaught(b -> b.afterToolExecution(after -> {}), "afterToolExecution");
  }

  @Test
  void anItemKeepsOneConversation() {
    TetherAgents agents = TetherAgents.create();
    try (AgentRun run = agents.bind(d.context)) {
      agents.memoryStore().updateMessages("conversation-1",
          List.of(dev.langchain4j.data.message.UserMessage.from("hi")));
      assertThat(agents.memoryStore().getMessages("conversation-1")).hasSize(1);
      assertThatThrownBy(() -> agents.memoryStore().getMessages("conversation-2"))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("one conversation");
    }
  }

  @Test
  void aCheckpointThatIsNotAConversationIsReportedNotOverwritten() {
    d.close();
    d = new Delivery(null, "cursor=42".getBytes(StandardCharsets.UTF_8));
    TetherAgents agents = TetherAgents.create();
    try (AgentRun run = agents.bind(d.context)) {
      assertThatThrownBy(run::resumed)
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("not a conversation");
      assertThatThrownBy(() -> agents.memoryStore().updateMessages("default", List.of()))
          .isInstanceOf(IllegalStateException.class);
    }
    assertThat(new String(d.context.lastCheckpoint().orElseThrow(), StandardCharsets.UTF_8))
        .isEqualTo("cursor=42");
  }

  @Test
  void memoryOfAnAttachedServiceIsCheckpointedAfterEveryMessage() {
    tool("a", n -> {});
    ScriptedChatModel model = ScriptedChatModel.script()
        .callTool("a", "{}").answer("done").build();
    List<Integer> sizes = new CopyOnWriteArrayList<>();
    TetherAgents observed = TetherAgents.builder().listener(new AgentListener() {
      @Override
      public void checkpointed(AgentRun run, int messages, int bytes) {
        sizes.add(messages);
      }
    }).build();
    Worker observedWorker = observed.attach(AiServices.builder(Worker.class), model)
        .tools(tools)
        .chatMemory(MessageWindowChatMemory.builder()
            .maxMessages(100).chatMemoryStore(observed.memoryStore()).build())
        .build();

    assertThat(run(observed, observedWorker)).isNull();

    // user message, AI tool request, tool result, final answer
    assertThat(sizes).containsExactly(1, 2, 3, 4);
    Conversation stored = ConversationCodec.decode(d.context.lastCheckpoint().orElseThrow());
    assertThat(stored.memoryId()).isEqualTo("default");
    assertThat(stored.messages()).hasSize(4);
  }
}
