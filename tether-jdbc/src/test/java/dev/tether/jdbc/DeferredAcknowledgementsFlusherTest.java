package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/** The flusher thread of a mailbox's deferred acknowledgements, without a store. */
class DeferredAcknowledgementsFlusherTest {

  private static Thread flusherOf(String queue) {
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().startsWith("tether-ack-flusher-" + queue + "-")) {
        return t;
      }
    }
    throw new AssertionError("no flusher thread for queue " + queue);
  }

  @Test
  void anInterruptedFlusherParksAgainInsteadOfSpinningAndStopsOnClose() {
    // nothing is ever queued: the flusher only parks, so it needs no committer
    DeferredAcknowledgements d =
        new DeferredAcknowledgements("flusher-interrupt", 10, Duration.ofMillis(200), null, null);
    Thread f = flusherOf("flusher-interrupt");
    try {
      await().atMost(Duration.ofSeconds(30)).until(() -> LockSupport.getBlocker(f) == d);
      f.interrupt();
      // with the interrupt kept, every park returned at once and the thread never parked again
      await().atMost(Duration.ofSeconds(30)).until(() -> !f.isInterrupted()
          && f.getState() == Thread.State.WAITING && LockSupport.getBlocker(f) == d);
    } finally {
      d.close();
    }
    assertThat(f.isAlive()).as("stopped by close()").isFalse();
  }
}
