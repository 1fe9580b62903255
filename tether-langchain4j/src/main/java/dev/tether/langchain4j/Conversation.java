package dev.tether.langchain4j;

import dev.langchain4j.data.message.ChatMessage;
import java.util.List;
import java.util.Objects;

/** An item's conversation as checkpointed: the memory id it belongs to and its messages. */
record Conversation(String memoryId, List<ChatMessage> messages) {
  static final Conversation EMPTY = new Conversation("", List.of());

  Conversation {
    Objects.requireNonNull(memoryId, "memoryId");
    messages = List.copyOf(messages);
  }
}
