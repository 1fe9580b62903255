package dev.tether.langchain4j;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.service.tool.ToolExecution;
import dev.tether.loop.Deadline;
import dev.tether.loop.WorkContext;
import dev.tether.loop.WorkStoppedException;
import dev.tether.mailbox.LeaseStatus;
import dev.tether.mailbox.MailboxException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One item's agent run on one thread: a handler's {@link WorkContext} bound by {@link
 * TetherAgents#bind(WorkContext)} until {@link #close()}. The AI-service calls the binding thread
 * makes meanwhile beat, check and checkpoint this context (see {@link TetherAgents} for how
 * callbacks on other threads find it).
 *
 * <p>Thread-safe: the accessors may be read from any thread (a tool running on an executor, a
 * streaming callback). {@link #close()} must be called on the thread that bound the run; closing
 * again does nothing. After close, a callback that still arrives for this run (a stream that
 * outlived its handler) fails with {@link IllegalStateException}.
 */
public final class AgentRun implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(AgentRun.class);

  /** The result recorded for a tool call that the previous delivery started but never finished. */
  static final String INTERRUPTED_TOOL_RESULT = "Tool execution was interrupted: the worker running"
      + " it stopped before its result was recorded. It may or may not have taken effect.";

  private final TetherAgents agents;
  private final WorkContext context;
  private final Thread owner;
  private final Set<UUID> invocations = ConcurrentHashMap.newKeySet();
  private final AtomicInteger modelCalls = new AtomicInteger();
  private final AtomicInteger toolCalls = new AtomicInteger();
  private final AtomicLong toolsRequested = new AtomicLong();
  private final AtomicLong toolsStarted = new AtomicLong();
  private final AtomicLong toolsFinished = new AtomicLong();
  private final AtomicLong refusedTools = new AtomicLong();
  private volatile boolean closed;

  // The conversation: one memory id per item. Written by one thread at a time (LangChain4j adds to
  // one memory sequentially), published through the volatile reference.
  private volatile Conversation conversation; // null until first read
  private volatile boolean resumed;
  private volatile AiMessage resumedAnswer; // set with resumed
  /** Whether LangChain4j reads or writes the conversation through the memory store in this run. */
  private volatile boolean memoryInUse;
  // What the checkpoint holds beyond the memory's messages (guarded by this): tool calls started
  // before the response that asked for them reached the memory (a streaming service running
  // tools concurrently), and tool results not yet added to it (LangChain4j adds a round's results
  // once every tool of the round ran). Recorded as they happen, so that a delivery that dies
  // mid-round leaves a finished tool's result, and a started tool's request, in the checkpoint.
  private final List<ToolExecutionRequest> unrecordedRequests = new ArrayList<>();
  private final List<ToolExecutionResultMessage> unrecordedResults = new ArrayList<>();
  /** The messages last written as the checkpoint, before and after fitting (guarded by this). */
  private List<ChatMessage> lastWritten;
  private List<ChatMessage> lastFitted;

  AgentRun(TetherAgents agents, WorkContext context, Thread owner) {
    this.agents = agents;
    this.context = context;
    this.owner = owner;
  }

  /**
   * Returns the bound context.
   *
   * @return the handler's context
   */
  public WorkContext context() {
    return context;
  }

  /**
   * Returns whether this run continues a conversation that an earlier delivery of the item
   * checkpointed through {@link TetherAgents#memoryStore()}. Reads (and decodes, once) the item's
   * checkpoint.
   *
   * @return true when the item's checkpoint held a conversation at the start of this delivery
   * @throws IllegalStateException if the item's checkpoint was not written by the memory store
   */
  public boolean resumed() {
    loadConversation();
    return resumed;
  }

  /**
   * Returns the answer that the conversation this delivery resumed already ended with: an
   * earlier delivery got the model's final answer (an AI message without tool requests, the
   * conversation's last message) and checkpointed it, but did not finish the item (it crashed or
   * was stopped before its acknowledgement, its acknowledgement failed, or the handler failed
   * after the answer). Calling the AI service again would append the task once more and ask the
   * model again; a handler that makes one AI-service call per item and wants the answer it
   * already has returns this one instead (with several calls per item, this is the last call's
   * answer):
   *
   * <pre>{@code
   * String answer = run.answered().map(AiMessage::text).orElseGet(() -> assistant.work(task));
   * }</pre>
   *
   * Reads (and decodes, once) the item's checkpoint, as {@link #resumed()} does.
   *
   * @return the answer, or empty when this delivery did not resume a conversation that ended in
   *     one
   * @throws IllegalStateException if the item's checkpoint was not written by the memory store
   */
  public Optional<AiMessage> answered() {
    loadConversation();
    return Optional.ofNullable(resumedAnswer);
  }

  /**
   * Returns the number of model requests made through this run (refused ones not counted).
   *
   * @return the count
   */
  public int modelCalls() {
    return modelCalls.get();
  }

  /**
   * Returns the number of tool executions started through this run (refused ones not counted).
   *
   * @return the count
   */
  public int toolCalls() {
    return toolCalls.get();
  }

  /**
   * Returns whether {@link #close()} was called.
   *
   * @return true once closed
   */
  public boolean isClosed() {
    return closed;
  }

  /**
   * Unbinds the context from the thread. Idempotent.
   *
   * @throws IllegalStateException if called on another thread than the one that bound the run
   *     (while it is still open)
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    if (Thread.currentThread() != owner) {
      throw new IllegalStateException("the run of message " + messageIdText() + " was bound on thread "
          + owner.getName() + " and must be closed there, not on "
          + Thread.currentThread().getName());
    }
    closed = true;
    agents.unbind(this);
  }

  @Override
  public String toString() {
    return "AgentRun[message=" + messageIdText() + ", delivery=" + context.deliveryCount()
        + ", modelCalls=" + modelCalls + ", toolCalls=" + toolCalls + ", closed=" + closed + "]";
  }

  // ---- used by the hooks, wrappers and the memory store ------------------------------------

  String messageIdText() {
    return context.messageId().orElse("(none)");
  }

  Set<UUID> invocationIds() {
    return new HashSet<>(invocations);
  }

  void invocationStarted(UUID id) {
    invocations.add(id);
    toolsRequested.set(toolsStarted.get()); // a new call starts with no tool calls pending
    toolsFinished.set(toolsStarted.get());
  }

  void invocationEnded(UUID id) {
    invocations.remove(id);
    foldUnrecorded();
  }

  /**
   * After an AI-service call: tool calls and results it recorded beyond the memory (the call
   * failed before they reached it) become part of the conversation, with an interrupted result
   * for a call without one, as the next delivery would see them; a further call in this run
   * continues from there rather than leaving them after its own messages.
   */
  private synchronized void foldUnrecorded() {
    if (unrecordedRequests.isEmpty() && unrecordedResults.isEmpty()) {
      return;
    }
    Conversation c = loadConversation();
    List<ChatMessage> all = withRecorded(c.messages(), unrecordedRequests, unrecordedResults);
    unrecordedRequests.clear();
    unrecordedResults.clear();
    conversation = repairInterruptedTools(new Conversation(c.memoryId(), List.copyOf(all)));
    lastWritten = null;
  }

  void beat() {
    context.beat();
  }

  void beforeTool(ToolExecutionRequest request) {
    ensureOpen("run tool '" + request.name() + "'");
    toolsStarted.incrementAndGet();
    beat();
    try {
      ensureCanContinue("tool '" + request.name() + "'");
    } catch (WorkStoppedException e) {
      refusedTools.incrementAndGet(); // never runs: no end to wait for
      throw e;
    }
    toolCalls.incrementAndGet();
    agents.safely("toolStarting", () -> agents.listener().toolStarting(this, request));
  }

  void afterTool(ToolExecution execution) {
    toolsFinished.incrementAndGet();
    ensureOpen("finish tool '" + execution.request().name() + "'");
    beat();
    if (memoryInUse) {
      recordResult(execution);
    }
    agents.safely("toolFinished", () -> agents.listener().toolFinished(this, execution));
  }

  /**
   * Checkpoints a tool call streamed in a response that is not complete yet (so not in the
   * memory), before LangChain4j may start the tool (a streaming service's concurrent tools). Only
   * for a stream that continues this run's conversation ({@code request}'s last message is the
   * memory's), and only for a call with an id, by which the complete response's call is known.
   */
  synchronized void recordStart(ToolExecutionRequest call, ChatRequest request) {
    if (!memoryInUse || call.id() == null) {
      return;
    }
    Conversation c = loadConversation();
    List<ChatMessage> sent = request.messages();
    boolean continues = !c.messages().isEmpty() && !sent.isEmpty()
        && sent.get(sent.size() - 1).equals(c.messages().get(c.messages().size() - 1));
    if (!continues || requested(c.messages(), call)
        || unrecordedRequests.stream().anyMatch(r -> sameCall(r, call))) {
      return;
    }
    List<ToolExecutionRequest> requests = new ArrayList<>(unrecordedRequests);
    requests.add(call);
    checkpoint(c, requests, unrecordedResults);
  }

  /**
   * Checkpoints a finished tool's result that the memory does not hold yet, when the tool is a
   * call of the conversation's latest round (or a call recorded by {@link #recordStart}). A call
   * without an id is recorded only once every call before it in its round has a result: a result
   * without an id is matched to its call by its place.
   */
  private synchronized void recordResult(ToolExecution execution) {
    ToolExecutionRequest call = execution.request();
    Conversation c = loadConversation();
    List<ToolExecutionRequest> round = latestRound(c.messages());
    int index = -1;
    for (int i = 0; i < round.size(); i++) {
      if (sameCall(round.get(i), call)) {
        index = i;
        break;
      }
    }
    boolean recordedStart = call.id() != null
        && unrecordedRequests.stream().anyMatch(r -> sameCall(r, call));
    if (index < 0 && !recordedStart) {
      return; // not a call of this conversation's current round
    }
    ToolExecutionResultMessage result = ToolExecutionResultMessage.builder()
        .id(call.id())
        .toolName(call.name())
        .contents(execution.resultContents())
        .isError(execution.hasFailed())
        .attributes(execution.attributes())
        .build();
    if (answered(c.messages(), result) || unrecordedResults.stream().anyMatch(r -> sameResult(r, result))) {
      return;
    }
    if (call.id() == null && resultsAfterLatestRound(c.messages()) + unrecordedResults.size() != index) {
      return; // an earlier call of the round has no result yet: the memory adds this one in order
    }
    List<ToolExecutionResultMessage> results = new ArrayList<>(unrecordedResults);
    results.add(result);
    checkpoint(c, unrecordedRequests, results);
  }

  /**
   * Beats and checks before a model request; throws when the run must stop.
   *
   * @param expectToolHooks whether tool calls requested by the previous response must have passed
   *     through the hooks (an attached AI service)
   */
  void beforeModelRequest(ChatRequest request, boolean expectToolHooks) {
    ensureOpen("send a model request");
    if (expectToolHooks && toolsStarted.get() < toolsRequested.get()) {
      throw new IllegalStateException("the previous model response of message " + messageIdText()
          + " requested " + toolsRequested.get() + " tool calls in all but Tether's tool hooks saw "
          + toolsStarted.get() + ": were beforeToolExecution/afterToolExecution set on the AI"
          + " service after TetherAgents.attach (replacing Tether's)? Observe tools with an"
          + " AgentListener instead");
    }
    if (expectToolHooks && toolsFinished.get() < toolsStarted.get() - refusedTools.get()) {
      throw new IllegalStateException("the tools of message " + messageIdText() + " started "
          + toolsStarted.get() + " times but Tether's after-tool hook saw "
          + toolsFinished.get() + " ends: was afterToolExecution set on the AI service after"
          + " TetherAgents.attach (replacing Tether's, which beats and checkpoints each result)?"
          + " Observe tools with an AgentListener instead");
    }
    beat();
    if (agents.verifyLeaseBeforeModelCall() && context.maxAttempts() > 0) {
      try {
        LeaseStatus status = context.checkLease();
        if (!status.isHeld()) {
          log.warn("Message {}: the lease is {} before a model request; refusing it", messageIdText(),
              status);
        }
      } catch (MailboxException e) {
        log.warn("Message {}: could not check the lease before a model request ({}); going on, the"
            + " lease's own bound still applies", messageIdText(), e.toString());
      }
    }
    ensureCanContinue("model request");
    modelCalls.incrementAndGet();
    agents.safely("modelRequest", () -> agents.listener().modelRequest(this, request));
  }

  void afterModelResponse(ChatResponse response) {
    beat();
    if (response != null && response.aiMessage() != null
        && response.aiMessage().hasToolExecutionRequests()) {
      toolsRequested.addAndGet(response.aiMessage().toolExecutionRequests().size());
    }
    agents.safely("modelResponse", () -> agents.listener().modelResponse(this, response));
  }

  void ensureOpen(String what) {
    if (closed) {
      throw new IllegalStateException("cannot " + what + ": the run of message " + messageIdText()
          + " was closed (its handler returned) while its AI-service call went on");
    }
  }

  /**
   * Throws when the run must stop: lease lost, cancelled, deadline passed, or (when configured)
   * shutdown requested. Cheap: no I/O.
   */
  void ensureCanContinue(String what) {
    WorkStoppedException stop = stopReason(what).orElse(null);
    if (stop != null) {
      throw stopped(stop);
    }
  }

  /** Logs and reports a stop; returns it, to be thrown. */
  WorkStoppedException stopped(WorkStoppedException stop) {
    log.info("Message {}: agent run stopped ({}): {}", messageIdText(), stop.reason(),
        stop.getMessage());
    agents.safely("stopped", () -> agents.listener().stopped(this, stop));
    return stop;
  }

  Optional<WorkStoppedException> stopReason(String what) {
    String id = messageIdText();
    if (context.isCancelled()) {
      return Optional.of(new WorkStoppedException(WorkStoppedException.Reason.CANCELLED,
          "message " + id + " was cancelled; refused: " + what));
    }
    if (context.isLeaseLost()) {
      return Optional.of(new WorkStoppedException(WorkStoppedException.Reason.LEASE_LOST,
          "the lease on message " + id + " (delivery " + context.deliveryCount()
              + ") is lost; refused: " + what));
    }
    if (context.deadline().map(Deadline::isExpired).orElse(false)) {
      return Optional.of(new WorkStoppedException(WorkStoppedException.Reason.DEADLINE,
          "message " + id + " passed its deadline; refused: " + what));
    }
    if (agents.stopOnShutdown() && context.isShutdownRequested()) {
      return Optional.of(new WorkStoppedException(WorkStoppedException.Reason.SHUTDOWN,
          "the loop is shutting down; message " + id + " will resume from its checkpoint; refused: "
              + what));
    }
    return Optional.empty();
  }

  // ---- the conversation --------------------------------------------------------------------

  List<ChatMessage> messages(Object memoryId) {
    ensureOpen("read the chat memory");
    memoryInUse = true;
    Conversation c = loadConversation();
    checkMemoryId(c, memoryId);
    return new ArrayList<>(c.messages());
  }

  synchronized void updateMessages(Object memoryId, List<ChatMessage> messages) {
    ensureOpen("write the chat memory");
    memoryInUse = true;
    Conversation c = loadConversation();
    checkMemoryId(c, memoryId);
    List<ToolExecutionRequest> requests = new ArrayList<>();
    List<ToolExecutionResultMessage> results = new ArrayList<>();
    if (!messages.isEmpty()) { // a cleared memory leaves nothing to add to
      unrecordedRequests.stream().filter(r -> !requested(messages, r)).forEach(requests::add);
      unrecordedResults.stream().filter(r -> !answered(messages, r)).forEach(results::add);
    }
    checkpoint(new Conversation(String.valueOf(memoryId), List.copyOf(messages)), requests, results);
  }

  /**
   * Writes {@code memory} (what the chat memory holds) with the tool calls and results recorded
   * beyond it as the item's checkpoint; once written, makes the fitted memory part the
   * conversation and those calls and results the ones recorded beyond it. Nothing changes when
   * the write fails.
   */
  private void checkpoint(Conversation memory, List<ToolExecutionRequest> requests,
      List<ToolExecutionResultMessage> results) {
    List<ChatMessage> all = withRecorded(memory.messages(), requests, results);
    int beyond = all.size() - memory.messages().size();
    if (all.equals(lastWritten)) {
      // a tool result recorded when it finished, now added to the memory as it was: written already
      conversation = memoryPart(memory.memoryId(), lastFitted, beyond);
      setUnrecorded(requests, results);
      return;
    }
    ConversationCodec.Fitted fitted = ConversationCodec.fit(
        new Conversation(memory.memoryId(), List.copyOf(all)), agents.maxCheckpointBytes(), messageIdText());
    if (fitted.dropped() > 0) {
      log.warn("Message {}: the conversation ({} messages, {} bytes) outgrew the checkpoint limit of"
              + " {} bytes; dropped its {} oldest tool-round messages, kept {} ({} bytes)",
          messageIdText(), all.size(), fitted.bytesBefore(), agents.maxCheckpointBytes(),
          fitted.dropped(), fitted.conversation().messages().size(), fitted.bytes().length);
      agents.safely("conversationTrimmed", () -> agents.listener().conversationTrimmed(
          this, fitted.dropped(), fitted.bytesBefore(), fitted.bytes().length));
    }
    try {
      context.checkpoint(fitted.bytes()); // fenced by the lease; beats
    } catch (WorkStoppedException e) {
      throw stopped(e);
    }
    lastWritten = all;
    lastFitted = fitted.conversation().messages();
    conversation = memoryPart(memory.memoryId(), lastFitted, beyond);
    setUnrecorded(requests, results);
    agents.safely("checkpointed", () -> agents.listener().checkpointed(
        this, fitted.conversation().messages().size(), fitted.bytes().length));
  }

  private void setUnrecorded(List<ToolExecutionRequest> requests,
      List<ToolExecutionResultMessage> results) {
    if (requests != unrecordedRequests) {
      unrecordedRequests.clear();
      unrecordedRequests.addAll(requests);
    }
    if (results != unrecordedResults) {
      unrecordedResults.clear();
      unrecordedResults.addAll(results);
    }
  }

  /** Where the latest tool-requesting response in {@code messages} is, or -1. */
  private static int latestRoundIndex(List<ChatMessage> messages) {
    for (int i = messages.size() - 1; i >= 0; i--) {
      if (messages.get(i) instanceof AiMessage ai && ai.hasToolExecutionRequests()) {
        return i;
      }
    }
    return -1;
  }

  /** The calls of the latest tool-requesting response in {@code messages}, or none. */
  private static List<ToolExecutionRequest> latestRound(List<ChatMessage> messages) {
    int i = latestRoundIndex(messages);
    return i < 0 ? List.of() : ((AiMessage) messages.get(i)).toolExecutionRequests();
  }

  /** How many tool results follow the latest tool-requesting response in {@code messages}. */
  private static int resultsAfterLatestRound(List<ChatMessage> messages) {
    int i = latestRoundIndex(messages);
    return i < 0 ? 0 : (int) messages.subList(i + 1, messages.size()).stream()
        .filter(m -> m instanceof ToolExecutionResultMessage).count();
  }

  /**
   * {@code memory}'s messages followed by the tool calls and results recorded beyond it: what a
   * checkpoint holds.
   */
  private static List<ChatMessage> withRecorded(List<ChatMessage> memory,
      List<ToolExecutionRequest> requests, List<ToolExecutionResultMessage> results) {
    List<ChatMessage> all = new ArrayList<>(memory);
    if (!requests.isEmpty()) {
      all.add(AiMessage.from(List.copyOf(requests)));
    }
    all.addAll(results);
    return all;
  }

  /**
   * The chat memory's part of a fitted checkpoint: all but the {@code beyond} messages recorded
   * after it (the fit keeps the latest messages, so those are its tail).
   */
  private static Conversation memoryPart(String memoryId, List<ChatMessage> fitted, int beyond) {
    return new Conversation(memoryId, List.copyOf(fitted.subList(0, Math.max(0, fitted.size() - beyond))));
  }

  /** Whether the latest tool-requesting response in {@code messages} asked for {@code call}. */
  private static boolean requested(List<ChatMessage> messages, ToolExecutionRequest call) {
    return latestRound(messages).stream().anyMatch(r -> sameCall(r, call));
  }

  /** Whether {@code messages} hold {@code result} after their latest tool-requesting response. */
  private static boolean answered(List<ChatMessage> messages, ToolExecutionResultMessage result) {
    return messages.subList(latestRoundIndex(messages) + 1, messages.size()).stream()
        .anyMatch(m -> m instanceof ToolExecutionResultMessage r && sameResult(r, result));
  }

  private static boolean sameCall(ToolExecutionRequest a, ToolExecutionRequest b) {
    return a.id() != null || b.id() != null
        ? java.util.Objects.equals(a.id(), b.id())
        : a.name().equals(b.name()) && java.util.Objects.equals(a.arguments(), b.arguments());
  }

  private static boolean sameResult(ToolExecutionResultMessage a, ToolExecutionResultMessage b) {
    return a.id() != null || b.id() != null ? java.util.Objects.equals(a.id(), b.id()) : a.equals(b);
  }

  private void checkMemoryId(Conversation c, Object memoryId) {
    String id = String.valueOf(memoryId);
    if (!c.messages().isEmpty() && !c.memoryId().equals(id)) {
      throw new IllegalStateException("message " + messageIdText() + " already holds the"
          + " conversation of memory id '" + c.memoryId() + "'; an item keeps one conversation, so"
          + " memory id '" + id + "' cannot be used for it (use the same memory id on every delivery)");
    }
  }

  private Conversation loadConversation() {
    Conversation c = conversation;
    if (c != null) {
      return c;
    }
    Optional<byte[]> stored = context.lastCheckpoint();
    if (stored.isEmpty()) {
      c = Conversation.EMPTY;
    } else {
      try {
        c = ConversationCodec.decode(stored.get());
      } catch (IllegalArgumentException e) {
        throw new IllegalStateException("the checkpoint of message " + messageIdText()
            + " is not a conversation written by TetherAgents.memoryStore() (" + e.getMessage()
            + "); an item whose checkpoint the memory store keeps must not be checkpointed"
            + " otherwise", e);
      }
      c = repairInterruptedTools(c);
      resumed = !c.messages().isEmpty();
      if (resumed && c.messages().get(c.messages().size() - 1) instanceof AiMessage last
          && !last.hasToolExecutionRequests()) {
        resumedAnswer = last;
      }
      if (resumed) {
        log.info("Message {} (delivery {}): resuming its conversation of {} messages from the"
            + " checkpoint", messageIdText(), context.deliveryCount(), c.messages().size());
      }
    }
    conversation = c;
    return c;
  }

  /**
   * Gives every tool call of the last tool round that has no recorded result an error result
   * saying it was interrupted, so that the conversation is well formed (every tool request
   * answered) and the model can decide whether to call the tool again.
   */
  private Conversation repairInterruptedTools(Conversation c) {
    List<ChatMessage> messages = c.messages();
    int last = latestRoundIndex(messages);
    if (last < 0) {
      return c;
    }
    AiMessage ai = (AiMessage) messages.get(last);
    List<ToolExecutionRequest> requests = ai.toolExecutionRequests();
    int answered = 0;
    Set<String> answeredIds = new HashSet<>();
    for (int i = last + 1; i < messages.size(); i++) {
      if (messages.get(i) instanceof ToolExecutionResultMessage r) {
        answered++;
        if (r.id() != null) {
          answeredIds.add(r.id());
        }
      }
    }
    List<ChatMessage> repaired = new ArrayList<>(messages);
    int added = 0;
    for (int i = 0; i < requests.size(); i++) {
      ToolExecutionRequest request = requests.get(i);
      boolean done = request.id() != null ? answeredIds.contains(request.id()) : i < answered;
      if (!done) {
        repaired.add(ToolExecutionResultMessage.builder()
            .id(request.id())
            .toolName(request.name())
            .text(INTERRUPTED_TOOL_RESULT)
            .isError(true)
            .build());
        added++;
      }
    }
    if (added == 0) {
      return c;
    }
    log.warn("Message {}: {} tool call(s) of the previous delivery never recorded a result; resuming"
        + " with an 'interrupted' error result for each", messageIdText(), added);
    return new Conversation(c.memoryId(), List.copyOf(repaired));
  }
}
