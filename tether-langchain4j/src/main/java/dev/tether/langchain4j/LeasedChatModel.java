package dev.tether.langchain4j;

import dev.langchain4j.model.ModelProvider;
import dev.langchain4j.model.chat.Capability;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.ChatRequestOptions;
import dev.langchain4j.model.chat.listener.ChatModelListener;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.response.ChatResponse;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * A chat model whose requests beat before and after, and are refused when the bound run must
 * stop. The wrapped model's own listeners fire inside it, once per request.
 */
final class LeasedChatModel implements ChatModel {
  private final TetherAgents agents;
  private final ChatModel delegate;
  private final boolean expectToolHooks;

  LeasedChatModel(TetherAgents agents, ChatModel delegate, boolean expectToolHooks) {
    this.agents = agents;
    this.delegate = Objects.requireNonNull(delegate, "model");
    this.expectToolHooks = expectToolHooks;
  }

  @Override
  public ChatResponse chat(ChatRequest request) {
    return chat(request, ChatRequestOptions.EMPTY);
  }

  @Override
  public ChatResponse chat(ChatRequest request, ChatRequestOptions options) {
    AgentRun run = agents.requireRun("send a model request");
    run.beforeModelRequest(request, expectToolHooks);
    ChatResponse response;
    try {
      // without options, the delegate's own chat(ChatRequest), which a model may override
      response = options == null || options.equals(ChatRequestOptions.EMPTY)
          ? delegate.chat(request)
          : delegate.chat(request, options);
    } catch (RuntimeException e) {
      run.beat(); // the call came back: not a hang
      throw e;
    }
    run.afterModelResponse(response);
    return response;
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
}
