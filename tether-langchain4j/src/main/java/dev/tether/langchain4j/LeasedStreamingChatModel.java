package dev.tether.langchain4j;

import dev.langchain4j.model.ModelProvider;
import dev.langchain4j.model.chat.Capability;
import dev.langchain4j.model.chat.ChatRequestOptions;
import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.listener.ChatModelListener;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.CompleteToolCall;
import dev.langchain4j.model.chat.response.PartialResponse;
import dev.langchain4j.model.chat.response.PartialResponseContext;
import dev.langchain4j.model.chat.response.PartialThinking;
import dev.langchain4j.model.chat.response.PartialThinkingContext;
import dev.langchain4j.model.chat.response.PartialToolCall;
import dev.langchain4j.model.chat.response.PartialToolCallContext;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.chat.response.StreamingHandle;
import dev.tether.loop.WorkStoppedException;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A streaming chat model whose requests beat and are refused (through the handler's {@code
 * onError}) when the bound run must stop, whose partial responses beat and stop the stream when
 * the run must stop, and whose handler callbacks run with the requesting thread's run bound.
 */
final class LeasedStreamingChatModel implements StreamingChatModel {
  private final TetherAgents agents;
  private final StreamingChatModel delegate;
  private final boolean expectToolHooks;

  LeasedStreamingChatModel(TetherAgents agents, StreamingChatModel delegate, boolean expectToolHooks) {
    this.agents = agents;
    this.delegate = Objects.requireNonNull(delegate, "model");
    this.expectToolHooks = expectToolHooks;
  }

  @Override
  public void chat(ChatRequest request, StreamingChatResponseHandler handler) {
    chat(request, ChatRequestOptions.EMPTY, handler);
  }

  @Override
  public void chat(
      ChatRequest request, ChatRequestOptions options, StreamingChatResponseHandler handler) {
    Objects.requireNonNull(handler, "handler");
    AgentRun run = agents.requireRun("send a streaming model request");
    try {
      run.beforeModelRequest(request, expectToolHooks);
    } catch (WorkStoppedException | IllegalStateException e) {
      handler.onError(e);
      return;
    }
    try {
      LeasedHandler leased = new LeasedHandler(run, request, handler);
      // without options, the delegate's own chat(request, handler), which a model may override
      if (options == null || options.equals(ChatRequestOptions.EMPTY)) {
        delegate.chat(request, leased);
      } else {
        delegate.chat(request, options, leased);
      }
    } catch (RuntimeException e) {
      run.beat();
      throw e;
    }
  }

  @Override
  public ChatRequestParameters defaultRequestParameters() {
    return delegate.defaultRequestParameters();
  }

  @Override
  public List<ChatModelListener> listeners() {
    return List.of(); // the delegate fires its own
  }

  @Override
  public ModelProvider provider() {
    return delegate.provider();
  }

  @Override
  public Set<Capability> supportedCapabilities() {
    return delegate.supportedCapabilities();
  }

  @Override
  public String toString() {
    return "Tether(" + delegate + ")";
  }

  /** Forwards one response's callbacks with the run bound; ends the stream once. */
  private final class LeasedHandler implements StreamingChatResponseHandler {
    private final AgentRun run;
    private final ChatRequest request;
    private final StreamingChatResponseHandler delegate;
    private final AtomicBoolean ended = new AtomicBoolean();

    LeasedHandler(AgentRun run, ChatRequest request, StreamingChatResponseHandler delegate) {
      this.run = run;
      this.request = request;
      this.delegate = delegate;
    }

    /** Beats for a partial result; false (and the stream ended) when the run must stop. */
    private boolean partial(StreamingHandle handle) {
      if (ended.get()) {
        return false;
      }
      if (run.isClosed()) {
        end(handle, new IllegalStateException("the run of message " + run.messageIdText()
            + " was closed (its handler returned) while its model response was still streaming"));
        return false;
      }
      run.beat();
      Optional<WorkStoppedException> stop = run.stopReason("streamed model response");
      if (stop.isPresent()) {
        end(handle, run.stopped(stop.get()));
        return false;
      }
      return true;
    }

    private void end(StreamingHandle handle, RuntimeException error) {
      if (!ended.compareAndSet(false, true)) {
        return;
      }
      if (handle != null) {
        try {
          handle.cancel();
        } catch (RuntimeException e) {
          // the stream ends on our side anyway: later callbacks are ignored
        }
      }
      agents.within(run, () -> delegate.onError(error));
    }

    @Override
    public void onPartialResponse(String partialResponse) {
      agents.within(run, () -> {
        if (partial(null)) {
          delegate.onPartialResponse(partialResponse);
        }
      });
    }

    @Override
    public void onPartialResponse(PartialResponse partialResponse, PartialResponseContext context) {
      agents.within(run, () -> {
        if (partial(context == null ? null : context.streamingHandle())) {
          delegate.onPartialResponse(partialResponse, context);
        }
      });
    }

    @Override
    public void onPartialThinking(PartialThinking partialThinking) {
      agents.within(run, () -> {
        if (partial(null)) {
          delegate.onPartialThinking(partialThinking);
        }
      });
    }

    @Override
    public void onPartialThinking(PartialThinking partialThinking, PartialThinkingContext context) {
      agents.within(run, () -> {
        if (partial(context == null ? null : context.streamingHandle())) {
          delegate.onPartialThinking(partialThinking, context);
        }
      });
    }

    @Override
    public void onPartialToolCall(PartialToolCall partialToolCall) {
      agents.within(run, () -> {
        if (partial(null)) {
          delegate.onPartialToolCall(partialToolCall);
        }
      });
    }

    @Override
    public void onPartialToolCall(PartialToolCall partialToolCall, PartialToolCallContext context) {
      agents.within(run, () -> {
        if (partial(context == null ? null : context.streamingHandle())) {
          delegate.onPartialToolCall(partialToolCall, context);
        }
      });
    }

    @Override
    public void onCompleteToolCall(CompleteToolCall completeToolCall) {
      agents.within(run, () -> {
        if (partial(null)) {
          // LangChain4j may start the tool now, before the response is complete and in the
          // memory: the call is checkpointed first
          try {
            run.recordStart(completeToolCall.toolExecutionRequest(), request);
          } catch (RuntimeException e) {
            end(null, e);
            return;
          }
          delegate.onCompleteToolCall(completeToolCall);
        }
      });
    }

    @Override
    public void onUnmappedRawEvent(Object rawEvent) {
      if (!ended.get()) {
        agents.within(run, () -> delegate.onUnmappedRawEvent(rawEvent));
      }
    }

    @Override
    public void onCompleteResponse(ChatResponse completeResponse) {
      if (!ended.compareAndSet(false, true)) {
        return;
      }
      agents.within(run, () -> {
        try {
          run.afterModelResponse(completeResponse);
          delegate.onCompleteResponse(completeResponse);
        } catch (RuntimeException e) {
          // LangChain4j's streaming AI service stores the response, runs the requested tools and
          // starts the next request in this callback: a refused tool or checkpoint is thrown
          // here. The stream already ended on our side, so the provider's onError with it would
          // be ignored and the call would never end: the handler gets it now.
          delegate.onError(e);
        }
      });
    }

    @Override
    public void onError(Throwable error) {
      if (!ended.compareAndSet(false, true)) {
        return;
      }
      agents.within(run, () -> {
        run.beat();
        delegate.onError(error);
      });
    }
  }
}
