package dev.tether.jackson;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import dev.tether.jdbc.WorkStatus;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A JdbcMailbox carrying records as JSON, on each engine (a subclass per engine). */
abstract class JacksonMailboxCompatibilityTest {
  record Resize(String image, int width) {}

  record Resized(String image, int width, String url) {}

  private TetherStore store;

  protected abstract TetherStore openStore();

  protected abstract void dropStore();

  @BeforeEach
  void open() {
    store = openStore();
  }

  @AfterEach
  void close() {
    store.close();
    dropStore();
  }

  private JdbcMailbox<Resize, Resized> mailbox() {
    return JdbcMailbox.builder(store, "images", JacksonCodec.of(Resize.class), JacksonCodec.of(Resized.class))
        .keepResults(true).maxAttempts(3).build();
  }

  private MainLoop<Resize, Resized> loop(JdbcMailbox<Resize, Resized> mailbox, List<Resize> seen) {
    return MainLoop.builder("images", mailbox, (Resize r, dev.tether.loop.WorkContext ctx) -> {
      seen.add(r);
      ctx.beat();
      return new Resized(r.image(), r.width(), "s3://thumbs/" + r.image());
    }).config(MainLoopConfig.builder().waitTime(Duration.ofMillis(200)).build()).build();
  }

  @Test
  void recordsTravelAsJsonAndResultsAreKeptAsJson() throws Exception {
    JdbcMailbox<Resize, Resized> mailbox = mailbox();
    long id = Long.parseLong(mailbox.send(new Resize("cat.png", 128)));
    List<Resize> seen = new CopyOnWriteArrayList<>();
    MainLoop<Resize, Resized> loop = loop(mailbox, seen);
    Thread t = new Thread(loop::run, "tether-test-loop");
    t.start();
    try {
      await().atMost(Duration.ofSeconds(30)).until(() -> status(id) == WorkStatus.COMPLETED);
    } finally {
      loop.shutdown();
      t.join(30_000);
    }
    assertThat(seen).containsExactly(new Resize("cat.png", 128));
    WorkItem item = new QueueMonitor(store).item(id).orElseThrow();
    assertThat(item.inputAsString()).isEqualTo("{\"image\":\"cat.png\",\"width\":128}");
    assertThat(JacksonCodec.of(Resized.class).decode(item.output()))
        .isEqualTo(new Resized("cat.png", 128, "s3://thumbs/cat.png"));
  }

  @Test
  void badJsonInAStoredItemIsDeadLetteredAtOnceNamingTheItemAndTheLoopGoesOn() throws Exception {
    JdbcMailbox<Resize, Resized> mailbox = mailbox();
    long bad = new LeaseManager(store, "producer").enqueue(NewWorkItem.builder("images")
        .input("{\"image\": \"dog.png\", \"width\": \"wide\"}".getBytes(StandardCharsets.UTF_8)).maxAttempts(3).build());
    long good = Long.parseLong(mailbox.send(new Resize("ok.png", 64)));
    List<Resize> seen = new CopyOnWriteArrayList<>();
    MainLoop<Resize, Resized> loop = loop(mailbox, seen);
    Thread t = new Thread(loop::run, "tether-test-loop");
    t.start();
    try {
      await().atMost(Duration.ofSeconds(30)).until(() -> status(good) == WorkStatus.COMPLETED);
      assertThat(loop.isRunning()).isTrue();
    } finally {
      loop.shutdown();
      t.join(30_000);
    }
    WorkItem item = new QueueMonitor(store).item(bad).orElseThrow();
    assertThat(item.status()).isEqualTo(WorkStatus.FAILED);
    assertThat(item.deliveryCount()).as("never retried").isEqualTo(1);
    assertThat(item.errorMessage())
        .contains("message " + bad)
        .contains("JacksonCodec[")
        .contains("Resize");
    assertThat(seen).containsExactly(new Resize("ok.png", 64));
  }

  private WorkStatus status(long id) {
    return new QueueMonitor(store).item(id).map(WorkItem::status).orElseThrow();
  }
}
