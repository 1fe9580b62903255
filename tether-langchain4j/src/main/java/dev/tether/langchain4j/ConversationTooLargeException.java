package dev.tether.langchain4j;

/**
 * An item's conversation does not fit in its checkpoint even after every older tool round was
 * dropped (the latest tool round, or the system and user messages, are too large by themselves).
 * Nothing was written; the AI-service call that tried to add a message ends with this exception.
 * Keep large tool results elsewhere (a blob store) and return a reference to the model, or raise
 * {@link TetherAgents.Builder#maxCheckpointBytes(int)} up to the mailbox's limit.
 */
public class ConversationTooLargeException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  private final String messageId;
  private final int bytes;
  private final int limit;

  /**
   * Creates the exception.
   *
   * @param messageId the item's message id
   * @param bytes the size of the smallest conversation that could be made
   * @param limit the checkpoint limit
   * @param dropped how many messages of older tool rounds were dropped before giving up
   */
  public ConversationTooLargeException(String messageId, int bytes, int limit, int dropped) {
    super("the conversation of message " + messageId + " needs " + bytes + " bytes, over the"
        + " checkpoint limit of " + limit + " bytes, even after dropping " + dropped + " messages of"
        + " older tool rounds; nothing was written. Keep large tool results elsewhere and return a"
        + " reference, or raise TetherAgents.Builder.maxCheckpointBytes (at most the mailbox's limit)");
    this.messageId = messageId;
    this.bytes = bytes;
    this.limit = limit;
  }

  /**
   * Returns the id of the item's message.
   *
   * @return the message id
   */
  public String messageId() {
    return messageId;
  }

  /**
   * Returns the size of the smallest conversation that could be made.
   *
   * @return bytes
   */
  public int bytes() {
    return bytes;
  }

  /**
   * Returns the checkpoint limit.
   *
   * @return bytes
   */
  public int limit() {
    return limit;
  }
}
