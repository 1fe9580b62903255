package dev.tether.mailbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class DeadLetterPolicyTest {
  private static final RuntimeException FAILURE = new IllegalStateException("handler failed");

  @Test
  void defaultsUseTheMessagesOwnBudgetWithBackoffFromOneSecondUpToFiveMinutes() {
    DeadLetterPolicy policy = DeadLetterPolicy.defaults();

    assertThat(policy.maxAttempts()).isEmpty();
    assertThat(policy.backoff(1)).isEqualTo(Duration.ofSeconds(1));
    assertThat(policy.backoff(2)).isEqualTo(Duration.ofSeconds(2));
    assertThat(policy.backoff(3)).isEqualTo(Duration.ofSeconds(4));
    assertThat(policy.backoff(9)).isEqualTo(Duration.ofSeconds(256));
    assertThat(policy.backoff(10)).isEqualTo(Duration.ofMinutes(5));
    assertThat(policy.toString()).contains("maxAttempts=the message's");
  }

  @Test
  void withABudgetOfThreeTheFirstTwoAttemptsRetryAndTheThirdDeadLetters() {
    DeadLetterPolicy policy = DeadLetterPolicy.defaults();

    assertThat(policy.decide(1, 3, FAILURE).isDeadLetter()).isFalse();
    assertThat(policy.decide(2, 3, FAILURE).isDeadLetter()).isFalse();
    DeadLetterPolicy.Decision third = policy.decide(3, 3, FAILURE);
    assertThat(third.isDeadLetter()).isTrue();
    assertThat(third.reason())
        .contains("attempt 3 of 3")
        .contains(IllegalStateException.class.getName())
        .contains("handler failed");
    assertThat(third.delay()).isZero();
    assertThat(policy.decide(4, 3, FAILURE).isDeadLetter()).isTrue();
  }

  @Test
  void aBudgetOfOneDeadLettersTheFirstFailure() {
    assertThat(DeadLetterPolicy.defaults().decide(1, 1, FAILURE).isDeadLetter()).isTrue();
  }

  @Test
  void aCapDeadLettersEarlierThanTheMessagesBudgetButNeverLater() {
    DeadLetterPolicy policy = DeadLetterPolicy.builder().maxAttempts(2).build();

    assertThat(policy.maxAttempts()).hasValue(2);
    assertThat(policy.decide(1, 5, FAILURE).isDeadLetter()).isFalse();
    assertThat(policy.decide(2, 5, FAILURE).reason()).contains("attempt 2 of 2");
    assertThat(policy.decide(1, 1, FAILURE).isDeadLetter())
        .as("a cap above the message's budget does not extend it")
        .isTrue();
  }

  @Test
  void retryDelayIsTheBackoffOfTheFailedAttempt() {
    DeadLetterPolicy policy = DeadLetterPolicy.defaults();
    for (int attempt = 1; attempt < 10; attempt++) {
      DeadLetterPolicy.Decision d = policy.decide(attempt, 10, FAILURE);
      assertThat(d.isDeadLetter()).isFalse();
      assertThat(d.delay()).isEqualTo(policy.backoff(attempt));
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
  void backoffNeverDecreasesAndStaysWithinItsBoundsEvenForHugeAttemptCounts() {
    DeadLetterPolicy policy =
        DeadLetterPolicy.builder().backoff(Duration.ofNanos(3), Duration.ofHours(12)).build();
    Duration previous = Duration.ZERO;
    for (int attempt = 1; attempt <= 200; attempt++) {
      Duration b = policy.backoff(attempt);
      assertThat(b).as("backoff(%d)", attempt).isGreaterThanOrEqualTo(previous);
      assertThat(b).isBetween(Duration.ofNanos(3), Duration.ofHours(12));
      previous = b;
    }
    assertThat(policy.backoff(Integer.MAX_VALUE)).isEqualTo(Duration.ofHours(12));
  }

  @Test
  void anErrorListedToDeadLetterAtOnceDeadLettersOnTheFirstAttempt() {
    DeadLetterPolicy policy =
        DeadLetterPolicy.builder().deadLetterOn(IllegalArgumentException.class).build();

    DeadLetterPolicy.Decision d = policy.decide(1, 3, new NumberFormatException("not a number: x"));

    assertThat(d.isDeadLetter()).as("subclasses match").isTrue();
    assertThat(d.reason())
        .contains(NumberFormatException.class.getName())
        .contains("not a number: x")
        .contains("attempt 1 of 3");
    assertThat(d.toString()).contains("DeadLetter");
    assertThat(policy.decide(1, 3, new UncheckedIOException(new IOException("disk"))).isDeadLetter())
        .as("other errors keep the budget")
        .isFalse();
  }

  @Test
  void maxAttemptsBelowOneIsRejectedNamingTheValue() {
    assertThatThrownBy(() -> DeadLetterPolicy.builder().maxAttempts(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxAttempts must be >= 1, was 0");
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
    DeadLetterPolicy.Builder builder = DeadLetterPolicy.builder().maxAttempts(3);
    DeadLetterPolicy policy = builder.build();

    builder.deadLetterOn(IllegalStateException.class).maxAttempts(1);

    assertThat(policy.maxAttempts()).hasValue(3);
    assertThat(policy.decide(1, 5, FAILURE).isDeadLetter()).isFalse();
  }

  @Test
  void decideRequiresAnError() {
    assertThatThrownBy(() -> DeadLetterPolicy.defaults().decide(1, 3, null))
        .isInstanceOf(NullPointerException.class);
  }
}
