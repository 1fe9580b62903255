package dev.tether;

import dev.tether.mailbox.Message;
import dev.tether.mailbox.ReceiptHandleExpiredException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/** A message that records extension calls and can be told to fail them. */
final class RecordingMessage implements Message<String, String> {
  final List<Duration> extensions = new CopyOnWriteArrayList<>();
  final AtomicInteger inFlight = new AtomicInteger();
  final AtomicInteger maxInFlight = new AtomicInteger();
  volatile RuntimeException failWith;
  volatile Consumer<Duration> onExtend = d -> {};

  int extendVisibilityCalls() {
    return extensions.size();
  }

  @Override
  public String id() {
    return "msg-1";
  }

  @Override
  public String body() {
    return "body";
  }

  @Override
  public String receiptHandle() {
    return "handle-1";
  }

  @Override
  public int deliveryCount() {
    return 1;
  }

  @Override
  public Instant enqueuedAt() {
    return Instant.EPOCH;
  }

  @Override
  public boolean hasReplyTo() {
    return false;
  }

  @Override
  public void acknowledge() {}

  @Override
  public void nack(Duration visibilityTimeout) {}

  @Override
  public void extendVisibility(Duration timeout) {
    int now = inFlight.incrementAndGet();
    maxInFlight.accumulateAndGet(now, Math::max);
    try {
      onExtend.accept(timeout);
      RuntimeException failure = failWith;
      if (failure != null) {
        throw failure;
      }
      extensions.add(timeout);
    } finally {
      inFlight.decrementAndGet();
    }
  }

  static ReceiptHandleExpiredException expired() {
    return new ReceiptHandleExpiredException("receipt handle handle-1 of message msg-1 expired");
  }

  @Override
  public void reply(String body) {}

  @Override
  public void replyAndAcknowledge(String body) {}

  @Override
  public void deadLetter(String reason) {}
}
