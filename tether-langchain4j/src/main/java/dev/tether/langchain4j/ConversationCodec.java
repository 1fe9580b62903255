package dev.tether.langchain4j;

import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.ChatMessageDeserializer;
import dev.langchain4j.data.message.ChatMessageSerializer;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The checkpoint format of a conversation, and the rule that makes it fit the limit.
 *
 * <p>Format (UTF-8): a header line {@value #HEADER}, a line with the memory id ({@code \} and line
 * breaks escaped), then LangChain4j's JSON of the messages ({@link ChatMessageSerializer}).
 */
final class ConversationCodec {
  static final String HEADER = "tether-langchain4j-conversation/1";

  private ConversationCodec() {}

  static byte[] encode(Conversation c) {
    String text = HEADER + "\n" + escape(c.memoryId()) + "\n"
        + ChatMessageSerializer.messagesToJson(c.messages());
    return text.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Decodes a checkpoint.
   *
   * @throws IllegalArgumentException if the bytes are not a conversation in this format
   */
  static Conversation decode(byte[] bytes) {
    String text = new String(bytes, StandardCharsets.UTF_8);
    int first = text.indexOf('\n');
    if (first < 0 || !text.substring(0, first).equals(HEADER)) {
      throw new IllegalArgumentException("no '" + HEADER + "' header");
    }
    int second = text.indexOf('\n', first + 1);
    if (second < 0) {
      throw new IllegalArgumentException("no memory id line");
    }
    String memoryId = unescape(text.substring(first + 1, second));
    List<ChatMessage> messages;
    try {
      messages = ChatMessageDeserializer.messagesFromJson(text.substring(second + 1));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("the messages are not valid LangChain4j JSON: " + e, e);
    }
    return new Conversation(memoryId, messages == null ? List.of() : messages);
  }

  /** A conversation made to fit: what is kept, its encoding, and what was dropped. */
  record Fitted(Conversation conversation, byte[] bytes, int dropped, int bytesBefore) {}

  /**
   * Encodes {@code c}, dropping its oldest tool rounds (an AI message that requested tools and the
   * tool results after it) until it fits in {@code limit} bytes. System messages, user messages,
   * AI answers without tool requests and the latest tool round are never dropped.
   *
   * @throws ConversationTooLargeException if it does not fit even then
   */
  static Fitted fit(Conversation c, int limit, String messageId) {
    byte[] bytes = encode(c);
    int before = bytes.length;
    if (bytes.length <= limit) {
      return new Fitted(c, bytes, 0, before);
    }
    List<ChatMessage> kept = new ArrayList<>(c.messages());
    int dropped = 0;
    while (bytes.length > limit) {
      int start = oldestDroppableRound(kept);
      if (start < 0) {
        throw new ConversationTooLargeException(messageId, bytes.length, limit, dropped);
      }
      int end = start + 1;
      while (end < kept.size() && kept.get(end) instanceof ToolExecutionResultMessage) {
        end++;
      }
      dropped += end - start;
      kept.subList(start, end).clear();
      bytes = encode(new Conversation(c.memoryId(), kept));
    }
    return new Fitted(new Conversation(c.memoryId(), kept), bytes, dropped, before);
  }

  /** The index of the oldest AI message with tool requests that is not the latest one, or -1. */
  private static int oldestDroppableRound(List<ChatMessage> messages) {
    int first = -1;
    int count = 0;
    for (int i = 0; i < messages.size(); i++) {
      if (messages.get(i) instanceof AiMessage ai && ai.hasToolExecutionRequests()) {
        if (first < 0) {
          first = i;
        }
        count++;
      }
    }
    return count >= 2 ? first : -1;
  }

  private static String escape(String s) {
    return s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r");
  }

  private static String unescape(String s) {
    StringBuilder out = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char ch = s.charAt(i);
      if (ch == '\\' && i + 1 < s.length()) {
        char next = s.charAt(++i);
        out.append(next == 'n' ? '\n' : next == 'r' ? '\r' : next);
      } else {
        out.append(ch);
      }
    }
    return out.toString();
  }
}
