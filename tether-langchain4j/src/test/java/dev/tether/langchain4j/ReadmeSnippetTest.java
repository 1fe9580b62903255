package dev.tether.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;

import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.memory.chat.MessageWindowChatMemory;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.service.AiServices;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.loop.WorkContext;
import dev.tether.mailbox.InMemoryMailbox;
import dev.tether.mailbox.Message;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The lines the README shows a LangChain4j user, compiled and run as written. */
class ReadmeSnippetTest {
  interface Assistant {
    String work(String task);
  }

  static final class RepoTools {
    @Tool("Runs the tests")
    String runTests() {
      return "212 tests, 0 failures";
    }
  }

  @Test
  void theReadmeLinesRunAnAgentOnAQueue() {
    ChatModel chatModel = ScriptedChatModel.script().callTool("runTests", "{}").answer("all green").build();
    try (InMemoryMailbox<String, String> jobs = InMemoryMailbox.<String, String>builder("jobs").build();
        InMemoryMailbox<String, String> results = InMemoryMailbox.<String, String>builder("results").build()) {
      jobs.send("make the build green", results);

      // ---- README: begin ----
      TetherAgents agents = TetherAgents.create();
      Assistant assistant = agents.attach(AiServices.builder(Assistant.class), chatModel)
          .tools(new RepoTools())
          .chatMemory(MessageWindowChatMemory.builder()
              .maxMessages(500)
              .chatMemoryStore(agents.memoryStore())      // the conversation is the item's checkpoint
              .build())
          .build();                                       // once, shared by every loop
      MainLoopConfig config = MainLoopConfig.builder()
          .longestSilentCall(Duration.ofSeconds(125))     // longest model call: checked on build
          .build();
      MainLoop<String, String> worker = MainLoop.builder("agents", jobs, (String task, WorkContext ctx) -> {
            try (AgentRun run = agents.bind(ctx)) {       // tools and model calls beat this lease
              return assistant.work(task);
            }
          }).config(config).build();
      // ---- README: end ----

      worker.run(1); // the job is waiting: one receive takes it

      assertThat(worker.config().orElseThrow().longestSilentCall()).contains(Duration.ofSeconds(125));
      List<Message<String, String>> answers = results.receive(10, Duration.ofSeconds(30), Duration.ZERO);
      assertThat(answers).extracting(Message::body).containsExactly("all green");
    }
  }
}
