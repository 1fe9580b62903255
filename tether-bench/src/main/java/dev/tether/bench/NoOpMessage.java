package dev.tether.bench;

import dev.tether.mailbox.LeaseStatus;
import dev.tether.mailbox.Message;
import dev.tether.mailbox.NackOutcome;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/** A message whose operations do nothing, to measure the cost around them. */
final class NoOpMessage implements Message<String, String> {
  private final Instant enqueuedAt = Instant.now();

  @Override
  public String id() {
    return "bench";
  }

  @Override
  public String body() {
    return "";
  }

  @Override
  public String receiptHandle() {
    return "bench-1";
  }

  @Override
  public int deliveryCount() {
    return 1;
  }

  @Override
  public Instant enqueuedAt() {
    return enqueuedAt;
  }

  @Override
  public boolean hasReplyTo() {
    return false;
  }

  @Override
  public int attempt() {
    return 1;
  }

  @Override
  public int maxAttempts() {
    return 3;
  }

  @Override
  public Optional<byte[]> lastCheckpoint() {
    return Optional.empty();
  }

  @Override
  public void checkpoint(byte[] data) {}

  @Override
  public LeaseStatus checkLease() {
    return LeaseStatus.HELD;
  }

  @Override
  public void acknowledge() {}

  @Override
  public void handBack() {}

  @Override
  public NackOutcome nack(Duration visibilityTimeout, String reason) {
    return NackOutcome.RETRY_SCHEDULED;
  }

  @Override
  public void extendVisibility(Duration timeout) {}

  @Override
  public void reply(String body) {}

  @Override
  public void replyAndAcknowledge(String body) {}

  @Override
  public void deadLetter(String reason) {}
}
