package dev.tether.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.memory.chat.MessageWindowChatMemory;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.CompleteToolCall;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.TokenStream;
import dev.langchain4j.service.tool.ToolExecution;
import dev.langchain4j.service.tool.ToolExecutor;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What the checkpoint holds of tool calls recorded as they happen (before LangChain4j adds them
 * to the memory): only calls of the conversation's own round, results in the order a resume
 * matches them, and nothing left behind a call that failed.
 */
class ToolRecordingTest {
  interface Worker {
    String work(String task);
  }

  interface StreamingWorker {
    TokenStream work(String task);
  }

  private Delivery d = new Delivery();
  private final List<ExecutorService> pools = new ArrayList<>();
  private final CountDownLatch bFinished = new CountDownLatch(1);

  @AfterEach
  void close() {
    pools.forEach(ExecutorService::shutdownNow);
    d.close();
  }

  private ExecutorService pool(int threads) {
    ExecutorService p = Executors.newFixedThreadPool(threads);
    pools.add(p);
    return p;
  }

  private static MessageWindowChatMemory memory(TetherAgents agents) {
    return MessageWindowChatMemory.builder().maxMessages(100).chatMemoryStore(agents.memoryStore()).build();
  }

  /** The next delivery of the item, starting from its checkpoint now. */
  private AgentRun resume(TetherAgents agents, byte[] checkpoint) {
    d.close();
    d = new Delivery(null, checkpoint);
    return agents.bind(d.context);
  }

  @Test
  void aToolOfAServiceWithoutTheMemoryStoreStaysOutOfTheConversation() {
    TetherAgents agents = TetherAgents.create();
    Worker planner = agents.attach(AiServices.builder(Worker.class),
            ScriptedChatModel.script().answer("plan").build())
        .chatMemory(memory(agents))
        .build();
    Map<ToolSpecification, ToolExecutor> tools = new LinkedHashMap<>();
    tools.put(ToolSpecification.builder().name("lookup").description("lookup").build(), (r, m) -> "found");
    Worker helper = agents.attach(AiServices.builder(Worker.class),
            ScriptedChatModel.script().callTool("lookup", "{}").answer("ok").build())
        .tools(tools)
        .build();
    try (AgentRun run = agents.bind(d.context)) {
      assertThat(planner.work("task")).isEqualTo("plan");
      assertThat(helper.work("sub-task")).isEqualTo("ok");
    }
    try (AgentRun next = resume(agents, d.context.lastCheckpoint().orElseThrow())) {
      assertThat(agents.memoryStore().getMessages("default")).hasSize(2);
      assertThat(next.answered()).map(AiMessage::text).contains("plan");
    }
  }

  @Test
  void resultsOfCallsWithoutIdsAreRecordedOnlyInTheirCallsOrder() throws Exception {
    // a and b have no ids and run concurrently; b ends first, and the delivery dies while a runs:
    // a resume matches results to calls by place, so b's result must not stand in a's
    TetherAgents agents = TetherAgents.builder().listener(new AgentListener() {
      @Override
      public void toolFinished(AgentRun run, ToolExecution execution) {
        if (execution.request().name().equals("b")) {
          bFinished.countDown();
        }
      }
    }).build();
    ChatModel model = new ChatModel() {
      @Override
      public ChatResponse doChat(ChatRequest request) {
        if (ScriptedChatModel.stepOf(request) == 0) {
          return ChatResponse.builder().aiMessage(AiMessage.from(List.of(
              ToolExecutionRequest.builder().name("a").arguments("{}").build(),
              ToolExecutionRequest.builder().name("b").arguments("{}").build()))).build();
        }
        return ChatResponse.builder().aiMessage(AiMessage.from("done")).build();
      }
    };
    AtomicReference<byte[]> killedAt = new AtomicReference<>();
    Map<ToolSpecification, ToolExecutor> tools = new LinkedHashMap<>();
    tools.put(ToolSpecification.builder().name("a").description("a").build(), (r, m) -> {
      try {
        assertThat(bFinished.await(10, TimeUnit.SECONDS)).isTrue();
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
      killedAt.set(d.context.lastCheckpoint().orElseThrow()); // the delivery dies here
      return "a-result";
    });
    tools.put(ToolSpecification.builder().name("b").description("b").build(), (r, m) -> "b-result");
    Worker worker = agents.attach(AiServices.builder(Worker.class), model)
        .tools(tools)
        .executeToolsConcurrently(pool(2))
        .chatMemory(memory(agents))
        .build();
    try (AgentRun run = agents.bind(d.context)) {
      assertThat(worker.work("task")).isEqualTo("done");
    }
    try (AgentRun next = resume(agents, killedAt.get())) {
      List<ChatMessage> resumed = agents.memoryStore().getMessages("default");
      AiMessage round = (AiMessage) resumed.get(1);
      List<ToolExecutionResultMessage> results = resumed.subList(2, resumed.size()).stream()
          .map(ToolExecutionResultMessage.class::cast).toList();
      assertThat(results).hasSize(2);
      for (int i = 0; i < 2; i++) {
        assertThat(results.get(i).toolName()).isEqualTo(round.toolExecutionRequests().get(i).name());
        assertThat(results.get(i).text()).isNotEqualTo("a-result"); // a had not returned
      }
    }
  }

  @Test
  void aCallThatFailedAfterAToolRanLeavesItsRoundInTheConversationNotAfterTheNextCall()
      throws Exception {
    // a streamed response fails after its concurrent tool ran; the handler calls again in the
    // same run, and the conversation must end with that call's answer
    CountDownLatch toolFinished = new CountDownLatch(1);
    TetherAgents agents = TetherAgents.builder().listener(new AgentListener() {
      @Override
      public void toolFinished(AgentRun run, ToolExecution execution) {
        toolFinished.countDown();
      }
    }).build();
    ExecutorService modelThread = pool(1);
    AtomicInteger calls = new AtomicInteger();
    StreamingChatModel model = new StreamingChatModel() {
      @Override
      public void doChat(ChatRequest request, StreamingChatResponseHandler handler) {
        int n = calls.getAndIncrement();
        modelThread.execute(() -> {
          if (n == 0) {
            handler.onCompleteToolCall(new CompleteToolCall(0,
                ToolExecutionRequest.builder().id("call-0").name("look").arguments("{}").build()));
            try {
              assertThat(toolFinished.await(10, TimeUnit.SECONDS)).isTrue();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
            handler.onError(new IllegalStateException("connection reset"));
          } else {
            handler.onCompleteResponse(ChatResponse.builder().aiMessage(AiMessage.from("done")).build());
          }
        });
      }
    };
    Map<ToolSpecification, ToolExecutor> tools = new LinkedHashMap<>();
    tools.put(ToolSpecification.builder().name("look").description("look").build(), (r, m) -> "seen");
    StreamingWorker worker = agents.attach(AiServices.builder(StreamingWorker.class), model)
        .tools(tools)
        .executeToolsConcurrently(pool(1))
        .chatMemory(memory(agents))
        .build();
    List<Throwable> failures = new ArrayList<>();
    try (AgentRun run = agents.bind(d.context)) {
      for (int attempt = 0; attempt < 2; attempt++) {
        CompletableFuture<ChatResponse> done = new CompletableFuture<>();
        worker.work("task").onPartialResponse(x -> {}).onCompleteResponse(done::complete)
            .onError(done::completeExceptionally).start();
        try {
          assertThat(done.get(10, TimeUnit.SECONDS).aiMessage().text()).isEqualTo("done");
          break;
        } catch (ExecutionException e) {
          failures.add(e.getCause());
        }
      }
    }
    assertThat(failures).singleElement().extracting(Throwable::getMessage).isEqualTo("connection reset");
    try (AgentRun next = resume(agents, d.context.lastCheckpoint().orElseThrow())) {
      assertThat(next.answered()).map(AiMessage::text).contains("done");
      List<ChatMessage> resumed = agents.memoryStore().getMessages("default");
      assertThat(resumed.get(1)).isInstanceOfSatisfying(AiMessage.class,
          ai -> assertThat(ai.toolExecutionRequests()).extracting(ToolExecutionRequest::id).containsExactly("call-0"));
      assertThat(resumed.get(2)).isInstanceOfSatisfying(ToolExecutionResultMessage.class,
          r -> assertThat(r.text()).isEqualTo("seen"));
    }
  }
}
