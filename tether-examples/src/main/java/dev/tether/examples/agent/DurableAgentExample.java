package dev.tether.langchain4j.example;

import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.memory.chat.MessageWindowChatMemory;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.SystemMessage;
import dev.langchain4j.service.tool.ToolExecution;
import dev.tether.LeaseExtenderConfig;
import dev.tether.langchain4j.AgentCalibration;
import dev.tether.langchain4j.AgentListener;
import dev.tether.langchain4j.AgentRun;
import dev.tether.langchain4j.TetherAgents;
import dev.tether.loop.Handler;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.loop.WorkStoppedException;
import dev.tether.mailbox.InMemoryMailbox;
import dev.tether.mailbox.Message;
import java.time.Duration;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A durable agent run, narrated, with no network and no key: an agent works through a task with
 * four tool calls on a queue; its worker is stopped (as by SIGTERM) after the second tool call;
 * the task is handed back and the next worker resumes from the checkpointed conversation, asks
 * the model only what it had not asked yet, and the answer is acknowledged once.
 *
 * <p>The model is {@link ScriptedChatModel}: it asks for the tools in the order written below, and
 * reads from each request how far the conversation is, exactly as a real model reads the history.
 *
 * <p>Run: {@code mvn -q -pl tether-langchain4j -am test-compile exec:java} (about five seconds).
 */
public final class DurableAgentExample {
  private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.S");

  /** The agent, as a LangChain4j AI service. */
  interface Engineer {
    @SystemMessage("You are a careful engineer. Use the tools, then report what you did.")
    String work(String task);
  }

  /** The agent's tools: each takes a moment, as real tools do. */
  static final class RepoTools {
    @Tool("Searches the issue tracker")
    String searchIssues(String query) {
      return work("2 issues match '" + query + "': #18 durable agent runs, #21 lease lost mid-run");
    }

    @Tool("Reads a file of the repository")
    String readFile(String path) {
      return work(path + ": 240 lines; extendVisibility is called on every beat that is due");
    }

    @Tool("Changes a file of the repository")
    String editFile(String path, String change) {
      return work(path + ": applied '" + change + "'");
    }

    @Tool("Runs the tests of a module")
    String runTests(String module) {
      return work(module + ": 212 tests, 0 failures");
    }

    private static String work(String result) {
      try {
        Thread.sleep(400);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return result;
    }
  }

  private DurableAgentExample() {}

  /**
   * Runs the example.
   *
   * @param args ignored
   * @throws Exception if interrupted
   */
  public static void main(String[] args) throws Exception {
    ScriptedChatModel model = ScriptedChatModel.script()
        .callTool("searchIssues", "{\"query\": \"lease lost\"}")
        .callTool("readFile", "{\"path\": \"tether-core/src/main/java/dev/tether/LeaseExtender.java\"}")
        .callTool("editFile", "{\"path\": \"LeaseExtender.java\", \"change\": \"log the lost lease once\"}")
        .callTool("runTests", "{\"module\": \"tether-core\"}")
        .answer(r -> "Done with '" + ScriptedChatModel.task(r) + "': found #21, changed"
            + " LeaseExtender.java, tether-core's tests pass.")
        .build();

    CountDownLatch secondToolDone = new CountDownLatch(1);
    List<String> toolsRun = new CopyOnWriteArrayList<>();
    TetherAgents agents = TetherAgents.builder()
        .stopOnShutdown(true) // a stopped worker hands the task back at its next call
        .listener(new Narrator(secondToolDone, toolsRun))
        .build();
    Engineer engineer = agents.attach(AiServices.builder(Engineer.class), model)
        .tools(new RepoTools())
        .chatMemory(MessageWindowChatMemory.builder()
            .maxMessages(200)
            .chatMemoryStore(agents.memoryStore())
            .build())
        .build();

    MainLoopConfig config = MainLoopConfig.builder()
        .visibilityTimeout(Duration.ofSeconds(3))
        .leaseExtender(LeaseExtenderConfig.of(Duration.ofMillis(300), Duration.ofSeconds(2)))
        .waitTime(Duration.ofMillis(200))
        .build();
    InMemoryMailbox<String, String> tasks = InMemoryMailbox.<String, String>builder("agent-tasks").build();
    InMemoryMailbox<String, String> results = InMemoryMailbox.<String, String>builder("agent-results").build();
    Handler<String, String> handler = (task, ctx) -> {
      try (AgentRun run = agents.bind(ctx)) {
        say("delivery " + ctx.deliveryCount() + " (attempt " + ctx.attempt() + " of "
            + ctx.maxAttempts() + ")" + (run.resumed()
                ? ": resuming the checkpointed conversation"
                : ": a fresh start"));
        return engineer.work(task);
      }
    };
    MainLoop.Listener loopEvents = new MainLoop.Listener() {
      @Override
      public void handedBack(Message<?, ?> message) {
        say("the task is handed back, attempt not charged; its checkpoint stays with it");
      }

      @Override
      public void completed(Message<?, ?> message, Duration took) {
        say("the answer is sent and the task acknowledged, as one step");
      }
    };

    say("Durable agent run: visibility 3 s, lease extended by 2 s at most every 0.3 s while the"
        + " agent beats; each tool takes 0.4 s");
    MainLoop<String, String> first = MainLoop.builder("worker-1", tasks, handler)
        .config(config).listener(loopEvents).build();
    AgentCalibration.check(first, Duration.ofSeconds(1)).forEach(v -> say("calibration: " + v));
    tasks.send("fix issue #21", results);

    Thread firstThread = new Thread(first::run, "worker-1");
    firstThread.start();
    secondToolDone.await(30, TimeUnit.SECONDS);
    say(">>> worker-1 is told to stop (SIGTERM) while the agent is mid-run");
    first.shutdown();
    firstThread.join(10_000);

    say(">>> worker-2 starts");
    MainLoop<String, String> second = MainLoop.builder("worker-2", tasks, handler)
        .config(config).listener(loopEvents).build();
    Thread secondThread = new Thread(() -> second.run(3), "worker-2");
    secondThread.start();
    List<Message<String, String>> answer = results.receive(10, Duration.ofSeconds(30), Duration.ofSeconds(20));
    second.shutdown();
    secondThread.join(10_000);

    say("");
    for (Message<String, String> a : answer) {
      say("result: " + a.body());
      a.acknowledge();
    }
    say("model steps answered, in order: " + model.answeredSteps() + " (none twice)");
    say("tools run: " + toolsRun + " (each once)");
    say("tasks left: " + tasks.approximateCount() + ", dead letters: " + tasks.deadLetters().size()
        + ", results: " + answer.size() + " (acknowledged once)");
    boolean asClaimed = answer.size() == 1 && model.answeredSteps().equals(List.of(0, 1, 2, 3, 4))
        && toolsRun.equals(List.of("searchIssues", "readFile", "editFile", "runTests"))
        && tasks.approximateCount() == 0 && tasks.deadLetters().isEmpty();
    tasks.close();
    results.close();
    if (!asClaimed) {
      throw new IllegalStateException("the run did not go as narrated; see above");
    }
  }

  /** Tells what the agent does and what each step does to the lease. */
  private static final class Narrator implements AgentListener {
    private final CountDownLatch secondToolDone;
    private final List<String> toolsRun;

    Narrator(CountDownLatch secondToolDone, List<String> toolsRun) {
      this.secondToolDone = secondToolDone;
      this.toolsRun = toolsRun;
    }

    @Override
    public void modelRequest(AgentRun run, ChatRequest request) {
      say("model call, step " + (ScriptedChatModel.stepOf(request) + 1)
          + " (beat; lease checked with the store)");
    }

    @Override
    public void toolStarting(AgentRun run, ToolExecutionRequest request) {
      say("  tool " + request.name() + request.arguments() + " (beat before)");
    }

    @Override
    public void toolFinished(AgentRun run, ToolExecution execution) {
      toolsRun.add(execution.request().name());
      say("  tool " + execution.request().name() + " -> " + execution.result() + " (beat after)");
      if (toolsRun.size() == 2) {
        secondToolDone.countDown();
      }
    }

    @Override
    public void checkpointed(AgentRun run, int messages, int bytes) {
      say("    checkpoint: " + messages + " messages, " + bytes + " bytes, fenced by the lease of"
          + " delivery " + run.context().deliveryCount());
    }

    @Override
    public void stopped(AgentRun run, WorkStoppedException reason) {
      say("  stopped (" + reason.reason() + "): " + reason.getMessage());
    }
  }

  private static void say(String line) {
    System.out.println(LocalTime.now().format(TIME) + " [" + Thread.currentThread().getName() + "] "
        + line);
  }
}
