package dev.tether;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tether.mailbox.MailboxConnectionException;
import dev.tether.test.SettableTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class LeaseExtenderTest {
  private final SettableTicker ticker = new SettableTicker();
  private final Heartbeat heartbeat = new Heartbeat(ticker);
  private final RecordingMessage msg = new RecordingMessage();

  private static LeaseExtender extender(Duration interval, Duration extension) {
    return new LeaseExtender(LeaseExtenderConfig.of(interval, extension));
  }

  @Test
  void extendsOnEveryBeatWhenIntervalIsZero() {
    LeaseExtender extender = extender(Duration.ZERO, Duration.ofSeconds(300));
    try (var attached = extender.attach(msg, heartbeat)) {
      heartbeat.beat();
      heartbeat.beat();
      heartbeat.beat();
      assertThat(attached.extensions()).isEqualTo(3);
    }
    assertThat(msg.extendVisibilityCalls()).isEqualTo(3);
    assertThat(msg.extensions).containsOnly(Duration.ofSeconds(300));
  }

  @Test
  void rateLimitsExtensionsToOncePerInterval() {
    // The interval starts at attach time: a message just received needs no extension.
    LeaseExtender extender = extender(Duration.ofSeconds(1), Duration.ofSeconds(300));
    try (var attached = extender.attach(msg, heartbeat)) {
      heartbeat.beat();
      heartbeat.beat();
      heartbeat.beat();
      assertThat(msg.extendVisibilityCalls()).isZero();

      ticker.advance(Duration.ofMillis(1100));
      heartbeat.beat(); // extends
      heartbeat.beat(); // skipped: interval not elapsed since that extension
      assertThat(msg.extendVisibilityCalls()).isEqualTo(1);

      ticker.advance(Duration.ofMillis(999));
      heartbeat.beat();
      assertThat(msg.extendVisibilityCalls()).isEqualTo(1);

      ticker.advance(Duration.ofMillis(1));
      heartbeat.beat(); // exactly one interval after the last extension
      assertThat(msg.extendVisibilityCalls()).isEqualTo(2);
    }
  }

  @Test
  void disabledExtenderNeverExtends() {
    LeaseExtender extender = new LeaseExtender(LeaseExtenderConfig.disabled());
    try (var attached = extender.attach(msg, heartbeat)) {
      ticker.advance(Duration.ofHours(1));
      heartbeat.beat();
    }
    assertThat(msg.extendVisibilityCalls()).isZero();
    assertThat(heartbeat.callbackCount()).isZero();
  }

  @Test
  void otherCallbacksStillRunWhileAttached() {
    List<String> calls = new ArrayList<>();
    heartbeat.addCallback(() -> calls.add("original"));
    LeaseExtender extender = extender(Duration.ZERO, Duration.ofSeconds(300));

    try (var attached = extender.attach(msg, heartbeat)) {
      heartbeat.beat();
    }
    heartbeat.beat();

    assertThat(calls).containsExactly("original", "original");
    assertThat(msg.extendVisibilityCalls()).isEqualTo(1);
  }

  @Test
  void stuckWorkerGetsNoExtension() {
    LeaseExtender extender = extender(Duration.ofMillis(100), Duration.ofSeconds(1));
    try (var attached = extender.attach(msg, heartbeat)) {
      ticker.advance(Duration.ofMillis(1500)); // no beats
    }
    assertThat(msg.extendVisibilityCalls()).isZero();
  }

  @Test
  void attachingTwiceWithoutDetachingIsAnError() {
    LeaseExtender extender = extender(Duration.ZERO, Duration.ofSeconds(300));
    try (var attached = extender.attach(msg, heartbeat)) {
      assertThatThrownBy(() -> extender.attach(new RecordingMessage(), new Heartbeat(ticker)))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("already attached to message msg-1");
      assertThat(extender.isAttached()).isTrue();
    }
    assertThat(extender.isAttached()).isFalse();
    try (var again = extender.attach(msg, heartbeat)) {
      assertThat(again.message()).isSameAs(msg);
    }
  }

  @Test
  void nestedExtendersDetachExactlyTheirOwnCallbackInAnyOrder() {
    // Swapping one on-beat hook and restoring the saved one on detach would break: with two extenders
    // detached out of order, the first restores a callback pointing at the second. Tether's
    // registrations make each detach exact.
    RecordingMessage outerMsg = new RecordingMessage();
    RecordingMessage innerMsg = new RecordingMessage();
    LeaseExtender outer = extender(Duration.ZERO, Duration.ofSeconds(300));
    LeaseExtender inner = extender(Duration.ZERO, Duration.ofSeconds(60));
    List<String> calls = new ArrayList<>();
    heartbeat.addCallback(() -> calls.add("user"));

    LeaseExtender.Attachment a = outer.attach(outerMsg, heartbeat);
    LeaseExtender.Attachment b = inner.attach(innerMsg, heartbeat);
    heartbeat.beat();
    a.close(); // out of order: the outer detaches first
    heartbeat.beat();
    b.close();
    heartbeat.beat();

    assertThat(outerMsg.extendVisibilityCalls()).isEqualTo(1);
    assertThat(innerMsg.extendVisibilityCalls()).isEqualTo(2);
    assertThat(calls).hasSize(3);
    assertThat(heartbeat.callbackCount()).isEqualTo(1);
  }

  @Test
  void expiredReceiptHandleMarksLeaseLostAndProcessingContinues() {
    LeaseExtender extender = extender(Duration.ZERO, Duration.ofSeconds(300));
    msg.failWith = RecordingMessage.expired();
    try (var attached = extender.attach(msg, heartbeat)) {
      heartbeat.beat(); // must not throw
      assertThat(attached.isLeaseLost()).isTrue();

      msg.failWith = null;
      heartbeat.beat(); // a lost lease is not extended again
      assertThat(msg.extendVisibilityCalls()).isZero();
    }
  }

  @Test
  void otherFailureSkipsTheExtensionAndALaterDueBeatRetries() {
    LeaseExtender extender = extender(Duration.ofSeconds(60), Duration.ofSeconds(300));
    msg.failWith = new MailboxConnectionException("database unreachable");
    try (var attached = extender.attach(msg, heartbeat)) {
      ticker.advance(Duration.ofSeconds(60));
      heartbeat.beat(); // fails, logged
      assertThat(attached.isLeaseLost()).isFalse();
      assertThat(attached.extensions()).isZero();

      msg.failWith = null;
      heartbeat.beat(); // not yet: retry waits min(interval, FAILURE_RETRY_DELAY)
      assertThat(msg.extendVisibilityCalls()).isZero();

      ticker.advance(LeaseExtender.FAILURE_RETRY_DELAY);
      heartbeat.beat();
      assertThat(msg.extendVisibilityCalls()).isEqualTo(1);
    }
  }

  @Test
  void aDueExtensionRunsOnceEvenWhenManyThreadsBeat() throws Exception {
    Heartbeat shared = new Heartbeat(ticker);
    LeaseExtender extender = extender(Duration.ZERO, Duration.ofSeconds(300));
    CountDownLatch inside = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger calls = new AtomicInteger();
    msg.onExtend =
        d -> {
          if (calls.incrementAndGet() == 1) {
            inside.countDown();
            await(release);
          }
        };
    try (var attached = extender.attach(msg, shared)) {
      Thread first = new Thread(shared::beat);
      first.start();
      assertThat(inside.await(5, TimeUnit.SECONDS)).isTrue();

      // While the first extension is in flight, other beats return at once without extending.
      for (int i = 0; i < 100; i++) {
        shared.beat();
      }
      assertThat(calls.get()).isEqualTo(1);

      release.countDown();
      first.join(5_000);
      assertThat(msg.maxInFlight.get()).isEqualTo(1);
      assertThat(attached.extensions()).isEqualTo(1);
    }
  }

  @Test
  void theExtensionCallRunsWithNoLockHeld() throws Exception {
    LeaseExtender extender = extender(Duration.ZERO, Duration.ofSeconds(300));
    AtomicInteger registeredDuringExtension = new AtomicInteger();
    msg.onExtend =
        d -> {
          // Registering from another thread while the extension runs would deadlock under a lock.
          Thread t =
              new Thread(
                  () -> {
                    try (var r = heartbeat.addCallback(() -> {})) {
                      registeredDuringExtension.incrementAndGet();
                    }
                  });
          t.start();
          try {
            t.join(5_000);
            assertThat(t.isAlive()).isFalse();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        };
    try (var attached = extender.attach(msg, heartbeat)) {
      heartbeat.beat();
    }
    assertThat(registeredDuringExtension.get()).isEqualTo(1);
  }

  @Test
  void listenerIsToldOfExtensionsFailuresAndLostLeases() {
    List<String> events = new ArrayList<>();
    LeaseExtender extender =
        new LeaseExtender(
            LeaseExtenderConfig.of(Duration.ZERO, Duration.ofSeconds(300)),
            new LeaseExtender.Listener() {
              @Override
              public void extended(dev.tether.mailbox.Message<?, ?> m, Duration extension) {
                events.add("extended " + extension.toSeconds());
              }

              @Override
              public void extensionFailed(dev.tether.mailbox.Message<?, ?> m, RuntimeException e) {
                events.add("failed");
                throw new IllegalStateException("listener bug is isolated");
              }

              @Override
              public void leaseLost(dev.tether.mailbox.Message<?, ?> m) {
                events.add("lost");
              }
            });
    try (var attached = extender.attach(msg, heartbeat)) {
      heartbeat.beat();
      msg.failWith = new MailboxConnectionException("down");
      heartbeat.beat();
      msg.failWith = RecordingMessage.expired();
      heartbeat.beat();
    }
    assertThat(events).containsExactly("extended 300", "failed", "lost");
  }

  @Test
  void closingTheAttachmentIsIdempotentAndStopsExtensions() {
    LeaseExtender extender = extender(Duration.ZERO, Duration.ofSeconds(300));
    LeaseExtender.Attachment attached = extender.attach(msg, heartbeat);
    attached.close();
    attached.close();
    heartbeat.beat();
    assertThat(msg.extendVisibilityCalls()).isZero();
    assertThat(attached.isActive()).isFalse();
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
