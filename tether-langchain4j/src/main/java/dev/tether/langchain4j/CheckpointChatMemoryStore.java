package dev.tether.langchain4j;

import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.store.memory.chat.ChatMemoryStore;
import java.util.List;

/** The chat-memory store of {@link TetherAgents#memoryStore()}: the bound item's checkpoint. */
final class CheckpointChatMemoryStore implements ChatMemoryStore {
  private final TetherAgents agents;

  CheckpointChatMemoryStore(TetherAgents agents) {
    this.agents = agents;
  }

  @Override
  public List<ChatMessage> getMessages(Object memoryId) {
    return agents.requireRun("read the chat memory").messages(memoryId);
  }

  @Override
  public void updateMessages(Object memoryId, List<ChatMessage> messages) {
    agents.requireRun("write the chat memory").updateMessages(memoryId, messages);
  }

  @Override
  public void deleteMessages(Object memoryId) {
    agents.requireRun("clear the chat memory").updateMessages(memoryId, List.of());
  }

  @Override
  public String toString() {
    return "TetherAgents.memoryStore()";
  }
}
