package dev.tether.langchain4j;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.service.tool.ToolExecution;
import dev.tether.loop.WorkStoppedException;

/**
 * Observes agent runs, for logs, narration and metrics; the way to watch tool calls of an attached
 * AI service (its tool hooks belong to Tether). Methods run on the thread of the event (the
 * handler's thread, a tool executor's, or a streaming model's), must be fast and should not throw:
 * an exception is logged and ignored, it never changes the run.
 */
public interface AgentListener {
  /** A listener that ignores everything. */
  AgentListener NONE = new AgentListener() {};

  /**
   * A tool is about to run (the beat before it is done and the run may go on).
   *
   * @param run the run
   * @param request the tool call
   */
  default void toolStarting(AgentRun run, ToolExecutionRequest request) {}

  /**
   * A tool finished (the beat after it is done); its result is not yet in the memory, but when
   * the run keeps its conversation through {@link TetherAgents#memoryStore()} it is already in
   * the item's checkpoint.
   *
   * @param run the run
   * @param execution the tool call and its result
   */
  default void toolFinished(AgentRun run, ToolExecution execution) {}

  /**
   * A model request is about to be sent (the beat and the checks are done).
   *
   * @param run the run
   * @param request the request
   */
  default void modelRequest(AgentRun run, ChatRequest request) {}

  /**
   * A model response arrived (the beat after it is done).
   *
   * @param run the run
   * @param response the response
   */
  default void modelResponse(AgentRun run, ChatResponse response) {}

  /**
   * The conversation was checkpointed through the lease.
   *
   * @param run the run
   * @param messages how many messages it holds now
   * @param bytes the checkpoint's size
   */
  default void checkpointed(AgentRun run, int messages, int bytes) {}

  /**
   * Older tool rounds were dropped so that the conversation fits in its checkpoint.
   *
   * @param run the run
   * @param droppedMessages how many messages were dropped
   * @param bytesBefore the size before
   * @param bytesAfter the size written
   */
  default void conversationTrimmed(AgentRun run, int droppedMessages, int bytesBefore, int bytesAfter) {}

  /**
   * A tool call, model request or streamed response was refused because the run must stop; the
   * exception is about to end the AI-service call.
   *
   * @param run the run
   * @param reason why
   */
  default void stopped(AgentRun run, WorkStoppedException reason) {}
}
