package dev.tether.langchain4j;

import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.service.tool.ToolExecution;
import dev.langchain4j.service.tool.ToolExecutor;
import dev.tether.loop.Handler;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The agent of the kill -9 tests, the same in the child process and in the parent: four tools in
 * order, a scripted model, the item's checkpoint as memory, and every model request, model
 * response and tool run appended (and synced) to a file as it happens, so that the parent knows
 * what a killed child did. Lines: {@code asked <step> <delivery>}, {@code answered <step>
 * <delivery>}, {@code tool <name> <delivery>}, {@code checkpoint <messages> <delivery>}.
 */
final class RecordedAgent {
  static final List<String> TOOLS = List.of("search", "read", "edit", "test");

  private final Path record;
  private final TetherAgents agents;
  private final Harness.Worker worker;

  /**
   * @param record the file to append to
   * @param hangAtStep the model step (0-based) at which a model call never returns (a stuck
   *     provider), or -1
   */
  RecordedAgent(Path record, int hangAtStep) {
    this.record = record;
    ScriptedChatModel.Script script = ScriptedChatModel.script();
    TOOLS.forEach(t -> script.callTool(t, "{}"));
    ScriptedChatModel model = script.answer(r -> "done: " + ScriptedChatModel.task(r)).build();
    model.whenCalled(step -> {
      if (step == hangAtStep) {
        hang();
      }
    });
    agents = TetherAgents.builder().listener(new AgentListener() {
      @Override
      public void modelRequest(AgentRun run, ChatRequest request) {
        append("asked " + ScriptedChatModel.stepOf(request) + " " + run.context().deliveryCount());
      }

      @Override
      public void modelResponse(AgentRun run, ChatResponse response) {
        append("answered " + stepAnswered(response) + " " + run.context().deliveryCount());
      }

      @Override
      public void toolFinished(AgentRun run, ToolExecution execution) {
        append("tool " + execution.request().name() + " " + run.context().deliveryCount());
      }

      @Override
      public void checkpointed(AgentRun run, int messages, int bytes) {
        append("checkpoint " + messages + " " + run.context().deliveryCount());
      }
    }).build();
    Map<ToolSpecification, ToolExecutor> tools = new LinkedHashMap<>();
    for (String t : TOOLS) {
      tools.put(ToolSpecification.builder().name(t).description("tool " + t).build(),
          (request, memoryId) -> t + " ok");
    }
    worker = Harness.worker(agents, model, tools);
  }

  /** The step a response answers: the tool it asks for, or the last step for the answer. */
  private static String stepAnswered(ChatResponse response) {
    if (response.aiMessage().hasToolExecutionRequests()) {
      return String.valueOf(TOOLS.indexOf(response.aiMessage().toolExecutionRequests().get(0).name()));
    }
    return String.valueOf(TOOLS.size());
  }

  Handler<String, String> handler(List<AgentRun> runs) {
    return Harness.handler(agents, worker, runs);
  }

  private synchronized void append(String line) {
    try {
      Files.writeString(record, line + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
          StandardOpenOption.APPEND, StandardOpenOption.SYNC);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void hang() {
    try {
      TimeUnit.HOURS.sleep(1);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
