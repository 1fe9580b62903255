package dev.tether.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.memory.chat.MessageWindowChatMemory;
import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.CompleteToolCall;
import dev.langchain4j.model.chat.response.PartialResponse;
import dev.langchain4j.model.chat.response.PartialResponseContext;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.chat.response.StreamingHandle;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.TokenStream;
import dev.langchain4j.service.tool.ToolExecutor;
import dev.tether.loop.WorkStoppedException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Streaming AI services: callbacks on the model's thread beat and checkpoint the right item. */
class StreamingAgentTest {
  interface StreamingWorker {
    TokenStream work(String task);
  }

  private final Delivery d = new Delivery();
  private final ExecutorService modelThread =
      Executors.newSingleThreadExecutor(r -> new Thread(r, "model-stream"));
  private final List<String> toolThreads = new CopyOnWriteArrayList<>();
  private final List<String> partials = new CopyOnWriteArrayList<>();

  @AfterEach
  void close() {
    modelThread.shutdownNow();
    d.close();
  }

  /**
   * Asks for {@code tools} tool calls, one per response, then streams {@code tokens} on its own
   * thread, running {@code betweenTokens} before each token; stops when its stream is cancelled.
   */
  private final class StreamingScript implements StreamingChatModel {
    final int tools;
    final List<String> tokens;
    final IntConsumer betweenTokens;
    volatile boolean cancelled;
    /** Runs on the model's thread before a tool-call response is handed over. */
    volatile Runnable beforeToolCallResponse = () -> {};

    StreamingScript(int tools, List<String> tokens, IntConsumer betweenTokens) {
      this.tools = tools;
      this.tokens = tokens;
      this.betweenTokens = betweenTokens;
    }

    @Override
    public void doChat(ChatRequest request, StreamingChatResponseHandler handler) {
      int step = ScriptedChatModel.stepOf(request);
      modelThread.execute(() -> {
        if (step < tools) {
          beforeToolCallResponse.run();
          complete(handler, ChatResponse.builder().aiMessage(AiMessage.from(
              ToolExecutionRequest.builder().id("call-" + step).name("look").arguments("{}").build()))
              .build());
          return;
        }
        StreamingHandle handle = new StreamingHandle() {
          @Override
          public void cancel() {
            cancelled = true;
          }

          @Override
          public boolean isCancelled() {
            return cancelled;
          }
        };
        for (int i = 0; i < tokens.size(); i++) {
          betweenTokens.accept(i);
          if (cancelled) {
            return;
          }
          handler.onPartialResponse(new PartialResponse(tokens.get(i)), new PartialResponseContext(handle));
        }
        complete(handler, ChatResponse.builder()
            .aiMessage(AiMessage.from(String.join("", tokens))).build());
      });
    }

    /**
     * Hands over the complete response as LangChain4j's providers do: what the handler throws
     * goes to its onError (InternalStreamingChatResponseHandlerUtils).
     */
    private void complete(StreamingChatResponseHandler handler, ChatResponse response) {
      try {
        handler.onCompleteResponse(response);
      } catch (RuntimeException e) {
        handler.onError(e);
      }
    }
  }

  private StreamingWorker worker(TetherAgents agents, StreamingChatModel model) {
    Map<ToolSpecification, ToolExecutor> tools = new LinkedHashMap<>();
    tools.put(ToolSpecification.builder().name("look").description("look").build(),
        (request, memoryId) -> "seen");
    return agents.attach(AiServices.builder(StreamingWorker.class), model)
        .tools(tools)
        .chatMemory(MessageWindowChatMemory.builder()
            .maxMessages(100).chatMemoryStore(agents.memoryStore()).build())
        .build();
  }

  private TetherAgents agents() {
    return TetherAgents.builder().listener(new AgentListener() {
      @Override
      public void toolStarting(AgentRun run, ToolExecutionRequest request) {
        toolThreads.add(Thread.currentThread().getName() + " " + run.context().messageId().orElseThrow());
      }
    }).build();
  }

  /** What a streaming run on {@code model} failed with (the handler's own exception), or null. */
  private Throwable failureOf(TetherAgents agents, StreamingScript model) {
    try {
      runStreaming(agents, worker(agents, model));
      return null;
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (Exception e) {
      return e;
    }
  }

  private String runStreaming(TetherAgents agents, StreamingWorker worker) throws Exception {
    try (AgentRun run = agents.bind(d.context)) {
      CompletableFuture<ChatResponse> done = new CompletableFuture<>();
      worker.work("stream it")
          .onPartialResponse(partials::add)
          .onCompleteResponse(done::complete)
          .onError(done::completeExceptionally)
          .start();
      return done.get(10, TimeUnit.SECONDS).aiMessage().text();
    }
  }

  @Test
  void streamedPartialsBeatAndToolsOnTheModelsThreadBeatTheRequestingItem() throws Exception {
    StreamingScript model = new StreamingScript(1, List.of("a", "b", "c", "d", "e"), i -> {});
    TetherAgents agents = agents();
    d.beats.set(0);

    String answer = runStreaming(agents, worker(agents, model));

    assertThat(answer).isEqualTo("abcde");
    assertThat(partials).containsExactly("a", "b", "c", "d", "e");
    assertThat(toolThreads).containsExactly("model-stream " + d.message.id());
    // 2 model calls x (request + response) + 1 tool x 2 + 5 partials + 4 checkpoints (user
    // message, tool request, tool result, answer)
    assertThat(d.beats.get()).isEqualTo(4 + 2 + 5 + 4);
    Conversation stored = ConversationCodec.decode(d.context.lastCheckpoint().orElseThrow());
    assertThat(stored.messages()).hasSize(4);
  }

  @Test
  void aLeaseLostWhileStreamingCancelsTheStreamAndEndsTheCallWithLeaseLost() {
    StreamingScript model = new StreamingScript(0, List.of("a", "b", "c", "d"), i -> {
      if (i == 2) {
        d.attachment.markLeaseLost();
      }
    });
    TetherAgents agents = agents();

    Throwable failure = failureOf(agents, model);

    assertThat(failure).isInstanceOf(WorkStoppedException.class);
    assertThat(((WorkStoppedException) failure).reason())
        .isEqualTo(WorkStoppedException.Reason.LEASE_LOST);
    assertThat(partials).containsExactly("a", "b");
    assertThat(model.cancelled).as("the stream was cancelled").isTrue();
  }

  @Test
  void aToolCallRefusedInsideTheCompleteResponseReachesOnError() {
    // LangChain4j's streaming AI service runs the requested tools inside onCompleteResponse; the
    // refusal of a cancelled item's tool is thrown there, and the provider hands it to onError
    StreamingScript model = new StreamingScript(1, List.of("a"), i -> {});
    model.beforeToolCallResponse = d.attachment::markCancelled;
    TetherAgents agents = agents();

    Throwable failure = failureOf(agents, model);

    assertThat(failure).isInstanceOf(WorkStoppedException.class);
    assertThat(((WorkStoppedException) failure).reason())
        .isEqualTo(WorkStoppedException.Reason.CANCELLED);
    assertThat(toolThreads).as("the tool did not run").isEmpty();
    assertThat(partials).isEmpty();
  }

  @Test
  void aToolRunConcurrentlyBeforeItsResponseEndedIsInTheCheckpointWithItsResult() throws Exception {
    // with concurrent tools LangChain4j starts a tool as soon as its call is streamed, before the
    // response that asks for it is complete and in the memory; the worker dies before the end
    java.util.concurrent.CountDownLatch toolDone = new java.util.concurrent.CountDownLatch(1);
    StreamingChatModel diesMidResponse = new StreamingChatModel() {
      @Override
      public void doChat(ChatRequest request, StreamingChatResponseHandler handler) {
        modelThread.execute(() -> handler.onCompleteToolCall(new CompleteToolCall(0,
            ToolExecutionRequest.builder().id("call-0").name("look").arguments("{}").build())));
      }
    };
    TetherAgents agents = agents();
    Map<ToolSpecification, ToolExecutor> tools = new LinkedHashMap<>();
    tools.put(ToolSpecification.builder().name("look").description("look").build(),
        (request, memoryId) -> {
          toolDone.countDown();
          return "seen";
        });
    ExecutorService toolThread = Executors.newSingleThreadExecutor(r -> new Thread(r, "tool"));
    try {
      StreamingWorker worker = agents.attach(AiServices.builder(StreamingWorker.class), diesMidResponse)
          .tools(tools)
          .executeToolsConcurrently(toolThread)
          .chatMemory(MessageWindowChatMemory.builder()
              .maxMessages(100).chatMemoryStore(agents.memoryStore()).build())
          .build();
      try (AgentRun run = agents.bind(d.context)) {
        worker.work("stream it").onPartialResponse(partials::add).onError(e -> {}).start();
        assertThat(toolDone.await(10, TimeUnit.SECONDS)).isTrue();
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(10)).until(() ->
            ConversationCodec.decode(d.context.lastCheckpoint().orElseThrow()).messages().size() == 3);
      }
    } finally {
      toolThread.shutdownNow();
    }
    // the delivery ends here (killed); the checkpoint holds the call and what it returned
    Conversation stored = ConversationCodec.decode(d.context.lastCheckpoint().orElseThrow());
    assertThat(stored.messages().get(1)).isInstanceOfSatisfying(AiMessage.class, ai ->
        assertThat(ai.toolExecutionRequests()).extracting(ToolExecutionRequest::id).containsExactly("call-0"));
    assertThat(stored.messages().get(2)).isInstanceOfSatisfying(
        dev.langchain4j.data.message.ToolExecutionResultMessage.class,
        r -> assertThat(r.text()).isEqualTo("seen"));
  }

  @Test
  void aStreamingRequestRefusedUpFrontReachesOnError() {
    StreamingScript model = new StreamingScript(0, List.of("a"), i -> {});
    TetherAgents agents = agents();
    d.attachment.markCancelled();

    Throwable failure = failureOf(agents, model);

    assertThat(failure).isInstanceOf(WorkStoppedException.class);
    assertThat(((WorkStoppedException) failure).reason())
        .isEqualTo(WorkStoppedException.Reason.CANCELLED);
    assertThat(partials).isEmpty();
  }
}
