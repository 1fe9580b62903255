package dev.tether.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.memory.chat.MessageWindowChatMemory;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.tool.ToolExecutor;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The conversation's checkpoint: format, the policy when it outgrows the limit, the resume. */
class ConversationCheckpointTest {
  interface Worker {
    @dev.langchain4j.service.SystemMessage("You are a careful engineer.")
    String work(String task);
  }

  private static AiMessage round(int n) {
    return AiMessage.from(ToolExecutionRequest.builder()
        .id("call-" + n).name("read").arguments("{}").build());
  }

  private static ToolExecutionResultMessage result(int n, String text) {
    return ToolExecutionResultMessage.from("call-" + n, "read", text);
  }

  @Test
  void aConversationRoundTripsWithItsMemoryId() {
    Conversation c = new Conversation("user\\42\nline2", List.of(
        SystemMessage.from("sys"), UserMessage.from("task"), round(1), result(1, "x"),
        AiMessage.from("done")));

    Conversation back = ConversationCodec.decode(ConversationCodec.encode(c));

    assertThat(back).isEqualTo(c);
  }

  @Test
  void bytesThatAreNotAConversationAreRejected() {
    assertThatThrownBy(() -> ConversationCodec.decode("cursor=42".getBytes(StandardCharsets.UTF_8)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("header");
    assertThatThrownBy(() -> ConversationCodec.decode(
        (ConversationCodec.HEADER + "\nid\n[{nope").getBytes(StandardCharsets.UTF_8)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("JSON");
  }

  @Test
  void anOversizedConversationDropsItsOldestToolRoundsAndKeepsSystemUserAndTheLatestRound() {
    String big = "r".repeat(400);
    List<ChatMessage> messages = new ArrayList<>(List.of(SystemMessage.from("sys"),
        UserMessage.from("task")));
    for (int i = 1; i <= 6; i++) {
      messages.add(round(i));
      messages.add(result(i, big));
    }
    int full = ConversationCodec.encode(new Conversation("default", messages)).length;

    ConversationCodec.Fitted fitted =
        ConversationCodec.fit(new Conversation("default", messages), full - 700, "m-1");

    // a round (request and 400-byte result) takes more than 500 bytes: two must go
    assertThat(fitted.bytes().length).isLessThanOrEqualTo(full - 700);
    assertThat(fitted.dropped()).isEqualTo(4); // two rounds of two messages
    List<ChatMessage> kept = fitted.conversation().messages();
    assertThat(kept.subList(0, 2)).containsExactly(SystemMessage.from("sys"), UserMessage.from("task"));
    assertThat(kept.get(2)).isEqualTo(round(3));
    assertThat(kept.get(kept.size() - 2)).isEqualTo(round(6));
    assertThat(ConversationCodec.decode(fitted.bytes())).isEqualTo(fitted.conversation());
  }

  @Test
  void aConversationThatCannotFitFailsClearlyAndWritesNothing() {
    List<ChatMessage> messages = List.of(UserMessage.from("task"), round(1),
        result(1, "x".repeat(5000)));

    assertThatThrownBy(() -> ConversationCodec.fit(new Conversation("default", messages), 2048, "m-1"))
        .isInstanceOf(ConversationTooLargeException.class)
        .hasMessageContaining("message m-1")
        .hasMessageContaining("limit of 2048 bytes")
        .satisfies(e -> assertThat(((ConversationTooLargeException) e).limit()).isEqualTo(2048));
  }

  @Test
  void anAgentRunOverTheLimitKeepsCheckpointingWithinItAndEndsWithTheTaskStillKnown() {
    try (Delivery d = new Delivery()) {
      Map<ToolSpecification, ToolExecutor> tools = new LinkedHashMap<>();
      tools.put(ToolSpecification.builder().name("read").description("read").build(),
          (request, memoryId) -> "line ".repeat(100)); // 500 bytes per result
      // counts its own calls (the rounds in a trimmed request no longer say how far it got)
      AtomicInteger calls = new AtomicInteger();
      ChatModel model = new ChatModel() {
        @Override
        public ChatResponse doChat(ChatRequest request) {
          int n = calls.incrementAndGet();
          AiMessage reply = n <= 8 ? round(n) : AiMessage.from("done: " + ScriptedChatModel.task(request));
          return ChatResponse.builder().aiMessage(reply).build();
        }
      };
      List<Integer> sizes = new CopyOnWriteArrayList<>();
      List<Integer> trimmed = new CopyOnWriteArrayList<>();
      TetherAgents agents = TetherAgents.builder()
          .maxCheckpointBytes(2048)
          .listener(new AgentListener() {
            @Override
            public void checkpointed(AgentRun run, int messages, int bytes) {
              sizes.add(bytes);
            }

            @Override
            public void conversationTrimmed(AgentRun run, int dropped, int before, int after) {
              trimmed.add(dropped);
            }
          })
          .build();
      Worker worker = agents.attach(AiServices.builder(Worker.class), model)
          .tools(tools)
          .chatMemory(MessageWindowChatMemory.builder()
              .maxMessages(1000).chatMemoryStore(agents.memoryStore()).build())
          .build();
      String answer;
      try (AgentRun run = agents.bind(d.context)) {
        answer = worker.work("read everything");
      }

      assertThat(answer).isEqualTo("done: read everything");
      assertThat(trimmed).isNotEmpty();
      assertThat(sizes).allMatch(bytes -> bytes <= 2048);
      Conversation last = ConversationCodec.decode(d.context.lastCheckpoint().orElseThrow());
      assertThat(last.messages().get(0)).isEqualTo(SystemMessage.from("You are a careful engineer."));
      assertThat(last.messages().get(1)).isEqualTo(UserMessage.from("read everything"));
      assertThat(last.messages().get(last.messages().size() - 1))
          .isEqualTo(AiMessage.from("done: read everything"));
    }
  }

  @Test
  void aToolResultTooLargeForAnyCheckpointEndsTheCallWithTheSizeError() {
    try (Delivery d = new Delivery()) {
      Map<ToolSpecification, ToolExecutor> tools = new LinkedHashMap<>();
      tools.put(ToolSpecification.builder().name("dump").description("dump").build(),
          (request, memoryId) -> "x".repeat(4096));
      ScriptedChatModel model = ScriptedChatModel.script()
          .callTool("dump", "{}").answer("done").build();
      TetherAgents agents = TetherAgents.builder().maxCheckpointBytes(2048).build();
      Worker worker = agents.attach(AiServices.builder(Worker.class), model)
          .tools(tools)
          .chatMemory(MessageWindowChatMemory.builder()
              .maxMessages(1000).chatMemoryStore(agents.memoryStore()).build())
          .build();

      try (AgentRun run = agents.bind(d.context)) {
        assertThatThrownBy(() -> worker.work("dump it"))
            .isInstanceOf(ConversationTooLargeException.class);
      }
      assertThat(model.answeredSteps()).containsExactly(0);
      Conversation last = ConversationCodec.decode(d.context.lastCheckpoint().orElseThrow());
      assertThat(last.messages()).hasSize(3); // system, user, the request for the tool
    }
  }

  @Test
  void aRunInterruptedMidToolResumesWithAnInterruptedResultForIt() {
    List<ChatMessage> before = List.of(UserMessage.from("task"), round(1), result(1, "one"),
        AiMessage.from(List.of(
            ToolExecutionRequest.builder().id("call-2a").name("read").arguments("{}").build(),
            ToolExecutionRequest.builder().id("call-2b").name("edit").arguments("{}").build())),
        ToolExecutionResultMessage.from("call-2a", "read", "two-a"));
    byte[] checkpoint = ConversationCodec.encode(new Conversation("default", before));
    try (Delivery d = new Delivery(null, checkpoint)) {
      TetherAgents agents = TetherAgents.create();
      try (AgentRun run = agents.bind(d.context)) {
        assertThat(run.resumed()).isTrue();
        List<ChatMessage> restored = agents.memoryStore().getMessages("default");
        assertThat(restored).hasSize(6);
        assertThat(restored.subList(0, 5)).isEqualTo(before);
        ToolExecutionResultMessage repaired = (ToolExecutionResultMessage) restored.get(5);
        assertThat(repaired.id()).isEqualTo("call-2b");
        assertThat(repaired.toolName()).isEqualTo("edit");
        assertThat(repaired.isError()).isTrue();
        assertThat(repaired.text()).contains("interrupted");
      }
    }
  }
}
