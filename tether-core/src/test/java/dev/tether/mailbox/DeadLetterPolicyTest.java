package dev.tether.mailbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

class DeadLetterPolicyTest {
  private static final RuntimeException FAILURE = new IllegalStateException("handler failed");

  @Test
  void defaultsAllowFiveDeliveriesWithBackoffFromOneSecondUpToFiveMinutes() {
    DeadLetterPolicy policy = DeadLetterPolicy.defaults();

    assertThat(policy.maxDeliveries()).isEqualTo(DeadLetterPolicy.DEFAULT_MAX_DELIVERIES).isEqualTo(5);
    assertThat(policy.backoff(1)).isEqualTo(Duration.ofSeconds(1));
    assertThat(policy.backoff(2)).isEqualTo(Duration.ofSeconds(2));
    assertThat(policy.backoff(3)).isEqualTo(Duration.ofSeconds(4));
    assertThat(policy.backoff(9)).isEqualTo(Duration.ofSeconds(256));
    assertThat(policy.backoff(10)).isEqualTo(Duration.ofMinutes(5));
    assertThat(policy.toString()).contains("maxDeliveries=5");
  }

  @Test
  void withMaxDeliveriesThreeTheFirstTwoDeliveriesRetryAndTheThirdDeadLetters() {
    DeadLetterPolicy policy = DeadLetterPolicy.builder().maxDeliveries(3).build();

    assertThat(policy.decide(1, FAILURE).isDeadLetter()).isFalse();
    assertThat(policy.decide(2, FAILURE).isDeadLetter()).isFalse();
    DeadLetterPolicy.Decision third = policy.decide(3, FAILURE);
    assertThat(third.isDeadLetter()).isTrue();
    assertThat(third.reason())
        .contains("delivery 3 of 3")
        .contains(IllegalStateException.class.getName())
        .contains("handler failed");
    assertThat(third.delay()).isZero();
    assertThat(policy.decide(4, FAILURE).isDeadLetter()).isTrue();
  }

  @Test
  void maxDeliveriesOfOneDeadLettersTheFirstFailure() {
    DeadLetterPolicy policy = DeadLetterPolicy.builder().maxDeliveries(1).build();
    assertThat(policy.decide(1, FAILURE).isDeadLetter()).isTrue();
  }

  @Test
  void retryDelayIsTheBackoffOfTheFailedDelivery() {
    DeadLetterPolicy policy = DeadLetterPolicy.builder().maxDeliveries(10).build();
    for (int delivery = 1; delivery < 10; delivery++) {
      DeadLetterPolicy.Decision d = policy.decide(delivery, FAILURE);
      assertThat(d.isDeadLetter()).isFalse();
      assertThat(d.delay()).isEqualTo(policy.backoff(delivery));
      assertThat(d.reason()).isNull();
      assertThat(d.toString()).contains("Retry");
    }
  }

  @Test
  void backoffDoublesFromTheInitialValueUntilTheCap() {
    DeadLetterPolicy policy =
        DeadLetterPolicy.builder().backoff(Duration.ofMillis(100), Duration.ofSeconds(1)).build();

    assertThat(policy.backoff(1)).isEqualTo(Duration.ofMillis(100));
    assertThat(policy.backoff(2)).isEqualTo(Duration.ofMillis(200));
    assertThat(policy.backoff(3)).isEqualTo(Duration.ofMillis(400));
    assertThat(policy.backoff(4)).isEqualTo(Duration.ofMillis(800));
    assertThat(policy.backoff(5)).isEqualTo(Duration.ofSeconds(1));
    assertThat(policy.backoff(6)).isEqualTo(Duration.ofSeconds(1));
  }

  @Test
  void backoffNeverDecreasesAndStaysWithinItsBoundsEvenForHugeDeliveryCounts() {
    DeadLetterPolicy policy =
        DeadLetterPolicy.builder().backoff(Duration.ofNanos(3), Duration.ofHours(12)).build();
    Duration previous = Duration.ZERO;
    for (int delivery = 1; delivery <= 200; delivery++) {
      Duration b = policy.backoff(delivery);
      assertThat(b).as("backoff(%d)", delivery).isGreaterThanOrEqualTo(previous);
      assertThat(b).isBetween(Duration.ofNanos(3), Duration.ofHours(12));
      previous = b;
    }
    assertThat(policy.backoff(Integer.MAX_VALUE)).isEqualTo(Duration.ofHours(12));
  }

  @Test
  void anErrorListedToDeadLetterAtOnceDeadLettersOnTheFirstDelivery() {
    DeadLetterPolicy policy =
        DeadLetterPolicy.builder().deadLetterOn(IllegalArgumentException.class).build();

    DeadLetterPolicy.Decision d = policy.decide(1, new NumberFormatException("not a number: x"));

    assertThat(d.isDeadLetter()).as("subclasses match").isTrue();
    assertThat(d.reason())
        .contains(NumberFormatException.class.getName())
        .contains("not a number: x");
    assertThat(d.toString()).contains("DeadLetter");
  }

  @Test
  void anErrorListedNeverToDeadLetterIsRetriedPastMaxDeliveries() {
    DeadLetterPolicy policy =
        DeadLetterPolicy.builder()
            .maxDeliveries(2)
            .neverDeadLetterOn(IOException.class)
            .build();

    DeadLetterPolicy.Decision d = policy.decide(50, new java.net.SocketTimeoutException("slow"));

    assertThat(d.isDeadLetter()).isFalse();
    assertThat(d.delay()).isEqualTo(policy.backoff(50));
    assertThat(policy.decide(2, FAILURE).isDeadLetter()).as("other errors keep the budget").isTrue();
  }

  @Test
  void deadLetterAtOnceIsCheckedBeforeNeverDeadLetter() {
    DeadLetterPolicy subclassAtOnce =
        DeadLetterPolicy.builder()
            .neverDeadLetterOn(RuntimeException.class)
            .deadLetterOn(UncheckedIOException.class)
            .build();
    DeadLetterPolicy superclassAtOnce =
        DeadLetterPolicy.builder()
            .deadLetterOn(RuntimeException.class)
            .neverDeadLetterOn(UncheckedIOException.class)
            .build();
    RuntimeException error = new UncheckedIOException(new IOException("disk"));

    assertThat(subclassAtOnce.decide(1, error).isDeadLetter()).isTrue();
    assertThat(superclassAtOnce.decide(1, error).isDeadLetter()).isTrue();
    assertThat(subclassAtOnce.decide(99, new IllegalStateException()).isDeadLetter()).isFalse();
  }

  @Test
  void aTypeInBothListsIsRejectedWhenBuilt() {
    DeadLetterPolicy.Builder builder =
        DeadLetterPolicy.builder()
            .deadLetterOn(TimeoutException.class)
            .neverDeadLetterOn(TimeoutException.class);

    assertThatThrownBy(builder::build)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(TimeoutException.class.getName())
        .hasMessageContaining("deadLetterOn")
        .hasMessageContaining("neverDeadLetterOn");
  }

  @Test
  void maxDeliveriesBelowOneIsRejectedNamingTheValue() {
    assertThatThrownBy(() -> DeadLetterPolicy.builder().maxDeliveries(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxDeliveries must be >= 1, was 0");
  }

  @Test
  void backoffBoundsAreValidatedNamingTheValues() {
    assertThatThrownBy(() -> DeadLetterPolicy.builder().backoff(Duration.ZERO, Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("initial backoff must be positive")
        .hasMessageContaining("PT0S");
    assertThatThrownBy(
            () -> DeadLetterPolicy.builder().backoff(Duration.ofSeconds(-1), Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("PT-1S");
    assertThatThrownBy(
            () -> DeadLetterPolicy.builder().backoff(Duration.ofSeconds(2), Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("PT1S")
        .hasMessageContaining("PT2S");
    assertThatThrownBy(
            () -> DeadLetterPolicy.builder().backoff(Duration.ofSeconds(1), Duration.ofHours(13)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("PT13H")
        .hasMessageContaining("PT12H");
    assertThatThrownBy(() -> DeadLetterPolicy.builder().deadLetterOn(null))
        .isInstanceOf(NullPointerException.class);
  }

  @Test
  void theBuiltPolicyIsNotChangedByLaterBuilderCalls() {
    DeadLetterPolicy.Builder builder = DeadLetterPolicy.builder().maxDeliveries(3);
    DeadLetterPolicy policy = builder.build();

    builder.deadLetterOn(IllegalStateException.class).maxDeliveries(1);

    assertThat(policy.maxDeliveries()).isEqualTo(3);
    assertThat(policy.decide(1, FAILURE).isDeadLetter()).isFalse();
  }

  @Test
  void decideRequiresAnError() {
    assertThatThrownBy(() -> DeadLetterPolicy.defaults().decide(1, null))
        .isInstanceOf(NullPointerException.class);
  }
}
