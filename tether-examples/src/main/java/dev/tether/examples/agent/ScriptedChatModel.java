package dev.tether.examples.agent;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import java.util.function.IntConsumer;

/**
 * A chat model that follows a script instead of calling a provider: step 1 asks for a tool, step 2
 * for another, ..., the last step answers. Which step a request is at is read from the request
 * itself (how many tool rounds it already holds), so a conversation resumed from a checkpoint
 * continues the script where it was, and every step answered is recorded, which shows that no
 * step was asked twice. Needs no network and no key. Thread-safe.
 *
 * <pre>{@code
 * ScriptedChatModel model = ScriptedChatModel.script()
 *     .callTool("readFile", "{\"path\":\"Mailbox.java\"}")
 *     .callTool("runTests", "{}")
 *     .answer("Done")
 *     .build();
 * }</pre>
 */
public final class ScriptedChatModel implements ChatModel {
  private final List<Step> steps;
  private final List<Integer> answered = new CopyOnWriteArrayList<>();
  private volatile IntConsumer whenCalled = step -> {};

  private ScriptedChatModel(List<Step> steps) {
    this.steps = List.copyOf(steps);
  }

  /**
   * Starts a script.
   *
   * @return a new script
   */
  public static Script script() {
    return new Script();
  }

  /**
   * Runs {@code action} with the step number (0-based) at each request, before it is answered
   * (to move a test's clock, say).
   *
   * @param action the action
   * @return this model
   */
  public ScriptedChatModel whenCalled(IntConsumer action) {
    this.whenCalled = Objects.requireNonNull(action, "action");
    return this;
  }

  /**
   * Returns the steps answered, in order (0-based).
   *
   * @return the steps
   */
  public List<Integer> answeredSteps() {
    return List.copyOf(answered);
  }

  /**
   * Returns the step a request is at: the number of tool rounds it holds.
   *
   * @param request the request
   * @return the step, 0-based
   */
  public static int stepOf(ChatRequest request) {
    int rounds = 0;
    for (ChatMessage m : request.messages()) {
      if (m instanceof AiMessage ai && ai.hasToolExecutionRequests()) {
        rounds++;
      }
    }
    return rounds;
  }

  @Override
  public ChatResponse doChat(ChatRequest request) {
    int step = stepOf(request);
    if (step >= steps.size()) {
      throw new IllegalStateException("the script has " + steps.size() + " steps; asked for step "
          + (step + 1));
    }
    whenCalled.accept(step);
    answered.add(step);
    return ChatResponse.builder().aiMessage(steps.get(step).reply(step, request)).build();
  }

  /** Builds a script, step by step. */
  public static final class Script {
    private final List<Step> steps = new ArrayList<>();

    private Script() {}

    /**
     * Adds a step that asks for one tool call.
     *
     * @param tool the tool's name
     * @param argumentsJson its arguments, as JSON
     * @return this script
     */
    public Script callTool(String tool, String argumentsJson) {
      return callTools(new String[] {tool, argumentsJson});
    }

    /**
     * Adds a step that asks for several tool calls at once.
     *
     * @param toolsAndArguments pairs of tool name and arguments JSON
     * @return this script
     */
    public Script callTools(String[]... toolsAndArguments) {
      List<String[]> calls = List.of(toolsAndArguments);
      steps.add((step, request) -> {
        List<ToolExecutionRequest> requests = new ArrayList<>();
        for (int i = 0; i < calls.size(); i++) {
          requests.add(ToolExecutionRequest.builder()
              .id("call-" + (step + 1) + "-" + (i + 1))
              .name(calls.get(i)[0])
              .arguments(calls.get(i)[1])
              .build());
        }
        return AiMessage.from(requests);
      });
      return this;
    }

    /**
     * Adds the final step: an answer.
     *
     * @param text the answer
     * @return this script
     */
    public Script answer(String text) {
      return answer(request -> text);
    }

    /**
     * Adds the final step: an answer made from the request (it may quote the task, say).
     *
     * @param text makes the answer
     * @return this script
     */
    public Script answer(Function<ChatRequest, String> text) {
      steps.add((step, request) -> AiMessage.from(text.apply(request)));
      return this;
    }

    /**
     * Builds the model.
     *
     * @return the model
     */
    public ScriptedChatModel build() {
      return new ScriptedChatModel(steps);
    }
  }

  /**
   * Returns the text of the first user message of a request (the task).
   *
   * @param request the request
   * @return the text, or empty
   */
  public static String task(ChatRequest request) {
    for (ChatMessage m : request.messages()) {
      if (m instanceof UserMessage u && u.hasSingleText()) {
        return u.singleText();
      }
    }
    return "";
  }

  @FunctionalInterface
  private interface Step {
    AiMessage reply(int step, ChatRequest request);
  }
}
