package dev.tether.jackson3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import dev.tether.jdbc.WorkStatus;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A JdbcMailbox carrying records as Jackson 3 JSON (the codec is the same on either engine). */
class Jackson3MailboxTest {
  record Resize(String image, int width, Instant requested) {}

  record Resized(String image, String url) {}

  @TempDir
  Path dir;

  @Test
  void recordsWithJavaTimeValuesTravelAsJsonAndResultsAreKept() throws Exception {
    try (TetherStore store = TetherStore.open(dir.resolve("tether.db").toString())) {
      JdbcMailbox<Resize, Resized> mailbox = JdbcMailbox.builder(store, "images",
          Jackson3Codec.of(Resize.class), Jackson3Codec.of(Resized.class)).keepResults(true).build();
      Resize sent = new Resize("cat.png", 128, Instant.parse("2026-11-27T05:00:00Z"));
      long id = Long.parseLong(mailbox.send(sent));
      List<Resize> seen = new CopyOnWriteArrayList<>();
      MainLoop<Resize, Resized> loop = MainLoop.builder("images", mailbox, (Resize r, dev.tether.loop.WorkContext ctx) -> {
        seen.add(r);
        return new Resized(r.image(), "s3://thumbs/" + r.image());
      }).config(MainLoopConfig.builder().waitTime(Duration.ofMillis(200)).build()).build();
      Thread t = new Thread(loop::run, "tether-test-loop");
      t.start();
      try {
        await().atMost(Duration.ofSeconds(30)).until(() ->
            new QueueMonitor(store).item(id).map(WorkItem::status).orElseThrow() == WorkStatus.COMPLETED);
      } finally {
        loop.shutdown();
        t.join(30_000);
      }
      assertThat(seen).containsExactly(sent);
      WorkItem item = new QueueMonitor(store).item(id).orElseThrow();
      assertThat(item.inputAsString())
          .isEqualTo("{\"image\":\"cat.png\",\"width\":128,\"requested\":\"2026-11-27T05:00:00Z\"}");
      assertThat(Jackson3Codec.of(Resized.class).decode(item.output()))
          .isEqualTo(new Resized("cat.png", "s3://thumbs/cat.png"));
    }
  }
}
