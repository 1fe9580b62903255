package dev.tether.langchain4j;

import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.observability.api.listener.AiServiceCompletedListener;
import dev.langchain4j.observability.api.listener.AiServiceErrorListener;
import dev.langchain4j.observability.api.listener.AiServiceStartedListener;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.tool.BeforeToolExecution;
import dev.langchain4j.service.tool.ToolExecution;
import dev.langchain4j.store.memory.chat.ChatMemoryStore;
import dev.tether.loop.WorkContext;
import dev.tether.loop.WorkStoppedException;
import dev.tether.mailbox.Mailbox;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes LangChain4j agent runs durable Tether work: the tool and model calls of an AI service
 * prove progress on the lease of the item the call runs for, are refused once that lease is gone,
 * and the conversation is kept in the item's checkpoint so that the next delivery resumes it.
 *
 * <pre>{@code
 * TetherAgents agents = TetherAgents.create();                      // once, shared
 * Assistant assistant = agents.attach(AiServices.builder(Assistant.class), chatModel)
 *     .tools(new RepoTools())
 *     .chatMemory(MessageWindowChatMemory.builder()
 *         .maxMessages(500).chatMemoryStore(agents.memoryStore()).build())
 *     .build();                                                     // once, shared by every loop
 *
 * Handler<String, String> handler = (task, ctx) -> {
 *   try (AgentRun run = agents.bind(ctx)) {                         // per item, in the handler
 *     return assistant.work(task);
 *   }
 * };
 * }</pre>
 *
 * <h2>Which item a call runs for</h2>
 *
 * {@link #bind(WorkContext)} binds the handler's context to the calling thread until the returned
 * {@link AgentRun} is closed; every callback of an attached AI service finds the run as follows.
 * Model requests and chat-memory reads and writes run on the thread that called the AI service,
 * so they read the binding of that thread. The start of every AI-service call (LangChain4j's
 * {@code AiServiceStartedEvent}, fired on the calling thread) records the run under the call's
 * invocation id, and the tool hooks look the run up by the invocation id of the tool call, so
 * tools that LangChain4j runs on an executor ({@code executeToolsConcurrently}) beat the right
 * lease too. A streaming model's callbacks run on the model's threads: the wrapped streaming model
 * carries the binding of the thread that made the request into every callback it forwards, and
 * with it the tool executions and the next model request that LangChain4j makes from there. So an
 * AI service built once and shared by many loops beats, for each call, the lease of the item that
 * call runs for and no other. No memory id is needed for this; a memory id, when used, must stay
 * the same for one item (one conversation per item).
 *
 * <h2>What an attached AI service does</h2>
 *
 * <ul>
 *   <li>Every tool execution beats before and after it runs; every model request beats before it
 *       is sent and when its response (or error) arrives; every streamed partial response
 *       (text, thinking, tool call) beats.
 *   <li>Before every tool execution and every model request, the run is checked: when the lease
 *       is lost ({@link WorkContext#isLeaseLost()}), the item is cancelled, its deadline passed or
 *       (with {@link Builder#stopOnShutdown(boolean)}) its loop is shutting down, the call is
 *       refused with {@link WorkStoppedException} of the matching reason, which ends the
 *       AI-service call (a {@link dev.tether.loop.MainLoop} then leaves the item to its new owner,
 *       or hands it back on shutdown). Before a model request the lease is also {@linkplain
 *       WorkContext#checkLease() checked with the store} ({@link
 *       Builder#verifyLeaseBeforeModelCall(boolean)}), so a cancellation or takeover is seen before
 *       tokens are spent. A streaming response whose run must stop is cancelled and ends with
 *       {@code onError(WorkStoppedException)}.
 *   <li>With {@link #memoryStore()} as the chat memory's store, the conversation is checkpointed
 *       through the lease after every message LangChain4j adds to the memory (each model response,
 *       each tool result), each tool result also as its tool returns (before the rest of its
 *       round runs), and a tool started before the response asking for it is in the memory (a
 *       streaming service's concurrent tools) before it runs; the next delivery of the item
 *       starts from it.
 * </ul>
 *
 * <h2>Resuming</h2>
 *
 * The next delivery's handler binds its context and calls the AI service as the first delivery
 * did: the memory then holds the conversation so far, so the model sees every earlier request,
 * response and tool result and is not asked again for what it already answered; LangChain4j
 * appends the call's user message once more after it ({@link AgentRun#resumed()} tells a handler
 * that prefers to send a shorter "continue" message instead). When the conversation already
 * ended in the model's final answer, {@link AgentRun#answered()} returns it, so that the handler
 * need not call the service again. A run interrupted while tools were
 * running resumes with an error result for each tool call whose result was not recorded ("the
 * worker running it stopped before its result was recorded; it may or may not have taken
 * effect"), so the model decides whether to call it again.
 *
 * <h2>Size of the conversation</h2>
 *
 * A checkpoint holds at most {@link Builder#maxCheckpointBytes(int)} bytes ({@link
 * Mailbox#MAX_CHECKPOINT_BYTES} by default). When the conversation outgrows it, the oldest tool
 * rounds (an AI message that requested tools, with the tool results that follow it) are dropped
 * until it fits, logged as a warning; system messages, user messages, plain AI answers and the
 * latest tool round are always kept, and what is kept is what the model sees from then on. When
 * it still does not fit, the write fails with {@link ConversationTooLargeException}, nothing is
 * written, and the AI-service call ends with it.
 *
 * <p>Thread-safe: one instance serves any number of loops and AI services. The wrappers and hooks
 * block only where the wrapped model or tool does, for one store round trip per checkpoint, and
 * for one store read per model request when {@linkplain Builder#verifyLeaseBeforeModelCall
 * verifying}. A call made without a bound context fails with {@link IllegalStateException}.
 */
public final class TetherAgents {
  private static final Logger log = LoggerFactory.getLogger(TetherAgents.class);

  private final int maxCheckpointBytes;
  private final boolean verifyLeaseBeforeModelCall;
  private final boolean stopOnShutdown;
  private final AgentListener listener;
  private final ThreadLocal<AgentRun> current = new ThreadLocal<>();
  /** The run {@link #current} was set to for a tool on a thread that had none bound. */
  private final ThreadLocal<AgentRun> lentToTool = new ThreadLocal<>();
  private final Map<UUID, AgentRun> byInvocation = new ConcurrentHashMap<>();
  private final CheckpointChatMemoryStore memoryStore = new CheckpointChatMemoryStore(this);

  private TetherAgents(Builder b) {
    this.maxCheckpointBytes = b.maxCheckpointBytes;
    this.verifyLeaseBeforeModelCall = b.verifyLeaseBeforeModelCall;
    this.stopOnShutdown = b.stopOnShutdown;
    this.listener = b.listener;
  }

  /**
   * Returns an instance with the defaults: checkpoints up to {@link
   * Mailbox#MAX_CHECKPOINT_BYTES}, the lease verified before each model request, runs not stopped
   * by a shutdown (they drain), no listener.
   *
   * @return a new instance
   */
  public static TetherAgents create() {
    return builder().build();
  }

  /**
   * Returns a builder starting from the defaults of {@link #create()}.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Binds {@code context} to the calling thread: the AI-service calls this thread makes until the
   * returned run is closed beat, check and checkpoint this context. Call it in the handler, around
   * the AI-service calls, and close it before the handler returns (try-with-resources).
   *
   * @param context the handler's context
   * @return the run; close it on this thread
   * @throws IllegalStateException if a run of this instance is already bound to this thread
   */
  public AgentRun bind(WorkContext context) {
    Objects.requireNonNull(context, "context");
    AgentRun existing = current.get();
    if (existing != null) {
      throw new IllegalStateException("a run of message " + existing.messageIdText()
          + " is already bound to thread " + Thread.currentThread().getName()
          + "; close it before binding message " + context.messageId().orElse("(none)"));
    }
    AgentRun run = new AgentRun(this, context, Thread.currentThread());
    current.set(run);
    return run;
  }

  /**
   * Returns the run bound to the calling thread: the handler's thread between {@link #bind} and
   * {@link AgentRun#close()}, and a tool's thread while the tool runs (also a tool that
   * LangChain4j runs on an executor, {@code executeToolsConcurrently}), so that a long tool can
   * beat its item's lease ({@code currentRun().ifPresent(r -> r.context().beat())}).
   *
   * @return the run, or empty outside {@link #bind} and outside a tool
   */
  public Optional<AgentRun> currentRun() {
    return Optional.ofNullable(current.get());
  }

  /**
   * Attaches an AI-service builder to Tether: sets its chat model to {@code model} wrapped by
   * {@link #chatModel(ChatModel)}, sets its {@code beforeToolExecution} and {@code
   * afterToolExecution} hooks, and registers listeners that record which run each call belongs
   * to. Do not set the chat model or the tool-execution hooks again on this builder (that would
   * replace Tether's; observe tools with an {@link AgentListener} instead): a model request that
   * follows tool calls that were not seen by the hooks fails with {@link IllegalStateException}.
   *
   * @param service the AI-service builder
   * @param model the model the service should use
   * @param <T> the AI-service interface
   * @return {@code service}, to go on configuring it
   */
  public <T> AiServices<T> attach(AiServices<T> service, ChatModel model) {
    Objects.requireNonNull(service, "service");
    service.chatModel(new LeasedChatModel(this, model, true));
    return hook(service);
  }

  /**
   * Attaches an AI-service builder whose methods stream ({@code TokenStream}) to Tether, as
   * {@link #attach(AiServices, ChatModel)} does, with {@code model} wrapped by {@link
   * #streamingChatModel(StreamingChatModel)}. A refused request or a stopped stream reaches the
   * token stream's {@code onError} as a {@link WorkStoppedException}.
   *
   * @param service the AI-service builder
   * @param model the streaming model the service should use
   * @param <T> the AI-service interface
   * @return {@code service}, to go on configuring it
   */
  public <T> AiServices<T> attach(AiServices<T> service, StreamingChatModel model) {
    Objects.requireNonNull(service, "service");
    service.streamingChatModel(new LeasedStreamingChatModel(this, model, true));
    return hook(service);
  }

  private <T> AiServices<T> hook(AiServices<T> service) {
    service.beforeToolExecution(this::beforeTool);
    service.afterToolExecution(this::afterTool);
    service.registerListener((AiServiceStartedListener) event -> {
      AgentRun run = current.get();
      if (run != null) {
        UUID id = event.invocationContext().invocationId();
        byInvocation.put(id, run);
        run.invocationStarted(id);
      }
    });
    service.registerListener((AiServiceCompletedListener) event ->
        forget(event.invocationContext().invocationId()));
    service.registerListener((AiServiceErrorListener) event ->
        forget(event.invocationContext().invocationId()));
    return service;
  }

  /**
   * Wraps a chat model so that each request made through it, on a thread with a bound run, beats
   * before and after and is refused when the run must stop. For code that calls a model directly;
   * AI services use {@link #attach(AiServices, ChatModel)}.
   *
   * @param model the model
   * @return the wrapper; thread-safe if {@code model} is
   */
  public ChatModel chatModel(ChatModel model) {
    return new LeasedChatModel(this, model, false);
  }

  /**
   * Wraps a streaming chat model so that each request beats and is refused (through the handler's
   * {@code onError}) when the run must stop, each partial response beats, and the handler's
   * callbacks run with the requesting thread's run bound.
   *
   * @param model the model
   * @return the wrapper; thread-safe if {@code model} is
   */
  public StreamingChatModel streamingChatModel(StreamingChatModel model) {
    return new LeasedStreamingChatModel(this, model, false);
  }

  /**
   * Returns the chat-memory store backed by the checkpoint of the item of the bound run: reads
   * return the item's conversation (restored from an earlier delivery's checkpoint at first), and
   * every write checkpoints the conversation through the lease (and beats), trimmed as the class
   * documentation says. Use it under a {@code MessageWindowChatMemory} (or any memory that keeps
   * its messages in the store); one memory object may be shared by all loops.
   *
   * <p>{@code updateMessages} blocks for one store round trip and throws {@link
   * WorkStoppedException} when the checkpoint is refused because the lease is gone, {@link
   * ConversationTooLargeException} when the conversation cannot fit, and {@link
   * IllegalStateException} without a bound run or when a second memory id is used for one item.
   *
   * @return the store, the same for every call
   */
  public ChatMemoryStore memoryStore() {
    return memoryStore;
  }

  int maxCheckpointBytes() {
    return maxCheckpointBytes;
  }

  boolean verifyLeaseBeforeModelCall() {
    return verifyLeaseBeforeModelCall;
  }

  boolean stopOnShutdown() {
    return stopOnShutdown;
  }

  AgentListener listener() {
    return listener;
  }

  AgentRun boundRun() {
    return current.get();
  }

  AgentRun requireRun(String what) {
    AgentRun run = current.get();
    if (run == null) {
      throw unbound(what);
    }
    return run;
  }

  AgentRun requireRun(UUID invocationId, String what) {
    AgentRun run = invocationId == null ? null : byInvocation.get(invocationId);
    if (run == null) {
      run = current.get();
    }
    if (run == null) {
      throw unbound(what);
    }
    return run;
  }

  /** Runs {@code action} with {@code run} bound to this thread, restoring what was bound. */
  void within(AgentRun run, Runnable action) {
    AgentRun previous = current.get();
    if (previous == run) {
      action.run();
      return;
    }
    current.set(run);
    try {
      action.run();
    } finally {
      if (previous == null) {
        current.remove();
      } else {
        current.set(previous);
      }
    }
  }

  void unbind(AgentRun run) {
    if (current.get() == run) {
      current.remove();
    }
    run.invocationIds().forEach(byInvocation::remove);
  }

  private void forget(UUID invocationId) {
    AgentRun run = byInvocation.remove(invocationId);
    if (run != null) {
      run.invocationEnded(invocationId);
    }
  }

  private void beforeTool(BeforeToolExecution before) {
    AgentRun run = requireRun(before.invocationContext().invocationId(),
        "run tool '" + before.request().name() + "'");
    run.beforeTool(before.request());
    if (current.get() != run) {
      // a tool on an executor thread: its body finds its run too (currentRun(), a beat); set
      // afresh for each tool, so a binding left by a tool whose end was never reported is replaced
      current.set(run);
      lentToTool.set(run);
    }
  }

  private void afterTool(ToolExecution execution) {
    AgentRun run = requireRun(execution.invocationContext().invocationId(),
        "finish tool '" + execution.request().name() + "'");
    try {
      run.afterTool(execution);
    } finally {
      if (lentToTool.get() == run) {
        lentToTool.remove();
        current.remove();
      }
    }
  }

  private static IllegalStateException unbound(String what) {
    return new IllegalStateException("cannot " + what + ": no Tether WorkContext is bound to thread "
        + Thread.currentThread().getName() + "; call TetherAgents.bind(context) in the handler,"
        + " around the AI-service call, on the thread that makes the call");
  }

  void safely(String what, Runnable call) {
    try {
      call.run();
    } catch (RuntimeException e) {
      log.error("AgentListener.{} failed; ignored", what, e);
    }
  }

  @Override
  public String toString() {
    return "TetherAgents[maxCheckpointBytes=" + maxCheckpointBytes + ", verifyLeaseBeforeModelCall="
        + verifyLeaseBeforeModelCall + ", stopOnShutdown=" + stopOnShutdown + "]";
  }

  /** Builds {@link TetherAgents}. Not thread-safe; each setter validates at once. */
  public static final class Builder {
    private int maxCheckpointBytes = Mailbox.MAX_CHECKPOINT_BYTES;
    private boolean verifyLeaseBeforeModelCall = true;
    private boolean stopOnShutdown;
    private AgentListener listener = AgentListener.NONE;

    private Builder() {}

    /**
     * Sets the largest checkpoint the conversation may take (the mailbox may allow more, never
     * less). Default {@link Mailbox#MAX_CHECKPOINT_BYTES}.
     *
     * @param bytes 1 KiB to {@link Mailbox#MAX_CHECKPOINT_BYTES}
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder maxCheckpointBytes(int bytes) {
      if (bytes < 1024 || bytes > Mailbox.MAX_CHECKPOINT_BYTES) {
        throw new IllegalArgumentException("maxCheckpointBytes must be 1024.."
            + Mailbox.MAX_CHECKPOINT_BYTES + " (the mailbox's limit), was " + bytes);
      }
      this.maxCheckpointBytes = bytes;
      return this;
    }

    /**
     * Sets whether the lease is checked with the mailbox's store ({@link WorkContext#checkLease()},
     * one read) before each model request, so that a takeover or cancellation is seen before
     * tokens are spent rather than at the next due extension. A store that cannot be reached is
     * logged and the request goes on. Default true.
     *
     * @param verify whether to check
     * @return this builder
     */
    public Builder verifyLeaseBeforeModelCall(boolean verify) {
      this.verifyLeaseBeforeModelCall = verify;
      return this;
    }

    /**
     * Sets whether a run stops (with {@link WorkStoppedException.Reason#SHUTDOWN}, at its next
     * tool or model call) once its loop is asked to shut down; the loop then hands the item back,
     * not charged, and the next delivery resumes from the checkpoint. Default false: a run goes on
     * while its loop drains, keeping its lease.
     *
     * @param stop whether to stop on shutdown
     * @return this builder
     */
    public Builder stopOnShutdown(boolean stop) {
      this.stopOnShutdown = stop;
      return this;
    }

    /**
     * Sets the listener told of tool and model calls, checkpoints and stops.
     *
     * @param listener the listener; fast and not throwing (exceptions are logged and ignored)
     * @return this builder
     */
    public Builder listener(AgentListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * Builds the instance.
     *
     * @return the instance
     */
    public TetherAgents build() {
      return new TetherAgents(this);
    }
  }
}
