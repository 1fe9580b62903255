package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.mailbox.ErrorReply;
import dev.tether.mailbox.Message;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Replies sent on an unbounded mailbox take PostgreSQL's one-statement single enqueue; they must
 * keep what makes them replies (the request they answer, and whether they report an error).
 */
class PostgresReplyEnqueueTest {
  @Test
  void repliesSentAloneKeepTheRequestTheyAnswerAndTheirErrorFlag() {
    try (PostgresTestSchema schema = new PostgresTestSchema("tether_reply_");
        TetherStore store = TetherStore.open(schema.url());
        JdbcMailbox<String, String> box = JdbcMailbox.ofStrings(store, "replies")) {
      String request = box.send("request");
      box.sendReply("answer", request);
      List<Message<String, String>> got = box.receive(10, Duration.ofMinutes(1), Duration.ZERO);
      assertThat(got).hasSize(2);
      assertThat(got.get(0).inReplyTo()).isEmpty();
      assertThat(got.get(1).inReplyTo()).contains(request);
      assertThat(got.get(1).errorReply()).isEmpty();
      got.forEach(Message::acknowledge);

      box.sendErrorReply(new ErrorReply(request, "it failed", 1, false));
      Message<String, String> error = box.receive(1, Duration.ofMinutes(1), Duration.ZERO).get(0);
      assertThat(error.inReplyTo()).contains(request);
      assertThat(error.errorReply()).isPresent();
    }
  }
}
