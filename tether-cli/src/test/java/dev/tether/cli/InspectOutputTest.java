package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.cli.internal.CommandResult;
import dev.tether.jdbc.Lease;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.TetherStore;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code inspect}'s table prints each delivery and checkpoint once and the item's whole error, and
 * a delivery that resumed from an earlier one's progress with the outcome it had.
 */
class InspectOutputTest {
  /** The payload of {@code tether enqueue -- true}. */
  private static final String TRUE_COMMAND =
      "{\"argv\":[\"true\"],\"shell\":false,\"liveness\":\"output\",\"env\":{}}";

  @TempDir Path dir;

  private String inspect(String db, long id) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = TetherCli.execute(new String[] {"inspect", "--db", db, Long.toString(id)},
        new PrintWriter(out, true), new PrintWriter(err, true));
    assertThat(code).as(err.toString()).isZero();
    return out.toString();
  }

  @Test
  void eachRowOnceAndTheWholeError() {
    String db = dir.resolve("t.db").toString();
    String summary = "exit status 2: " + "x".repeat(300) + " the end of a long first line";
    String error = summary + "\n--- stderr (tail) ---\nlast words";
    long id;
    try (TetherStore s = TetherStore.open(db)) {
      LeaseManager lm = new LeaseManager(s, "test");
      id = lm.enqueue(NewWorkItem.builder("default")
          .input("{\"argv\":[\"false\"],\"shell\":false,\"liveness\":\"output\",\"env\":{}}")
          .maxAttempts(1).build());
      Lease l = lm.acquire("default", Duration.ofMinutes(1)).orElseThrow();
      lm.release(l.itemId(), l.token(), false, null, error);
    }
    String out = inspect(db, id);
    assertThat(out).contains("error:            failed on attempt 1 of 1: " + summary + "\n")
        .contains("--- stderr (tail) ---\nlast words");
    assertThat(out.split("released_failed", -1)).as(out).hasSize(2); // one row: the delivery's
  }

  @Test
  void aDeliveryThatResumedFromProgressShowsHowItEndedAndItsOutput() {
    String db = dir.resolve("t.db").toString();
    long id;
    try (TetherStore s = TetherStore.open(db)) {
      LeaseManager lm = new LeaseManager(s, "test");
      Lease first = firstDelivery(lm);
      id = first.itemId();
      lm.checkpoint(first.itemId(), first.token(), "step 2".getBytes(java.nio.charset.StandardCharsets.UTF_8));
      lm.handBack(first.itemId(), first.token(), Duration.ZERO);
      // delivery 2 starts from delivery 1's progress (a progress_taken_over checkpoint) and succeeds
      Lease second = lm.acquire("default", Duration.ofMinutes(1)).orElseThrow();
      assertThat(second.deliveryCount()).isEqualTo(2);
      String result = new CommandResult(0, 1200, "resumed at step 3\ndone\n", "", 23, 0, 2, null, null).toJson();
      lm.release(second.itemId(), second.token(), true, result, null);
    }
    String out = inspect(db, id);
    // the deliveries table: delivery 2 completed (it showed its takeover as its outcome before)
    assertThat(out).as(out).containsPattern("(?m)^2 +completed ");
    assertThat(out).as(out).containsPattern("(?m)^1 +handed_back ");
    // the takeover is listed with the other checkpoints, once
    assertThat(out.split("progress_taken_over", -1)).as(out).hasSize(2);
    assertThat(out).as(out).contains("--- stdout (tail) of delivery 2, completed ---\nresumed at step 3\ndone");
  }

  @Test
  void cancellingAPendingItemDoesNotTakeOverItsLastDeliverysOutcome() {
    String db = dir.resolve("t.db").toString();
    long id;
    try (TetherStore s = TetherStore.open(db)) {
      LeaseManager lm = new LeaseManager(s, "test");
      Lease l = firstDelivery(lm);
      id = l.itemId();
      lm.handBack(l.itemId(), l.token(), Duration.ZERO,
          new dev.tether.mailbox.OutputTail("draining\n", "", 9, Duration.ZERO, Duration.ZERO));
      assertThat(new dev.tether.jdbc.QueueAdmin(s).cancel(id, "not needed")).isTrue();
    }
    String out = inspect(db, id);
    // delivery 1 ended handed back, with its output; the cancel of the pending item came after
    assertThat(out).as(out).containsPattern("(?m)^1 +handed_back ");
    assertThat(out).as(out).contains("--- stdout (tail) of delivery 1, handed_back ---\ndraining");
    assertThat(out).as(out).containsPattern("(?m)^cancelled +1 ");
  }

  @Test
  void aDeliveryStillRunningHasNoReasonOfAnEarlierOnes() {
    String db = dir.resolve("t.db").toString();
    long id;
    try (TetherStore s = TetherStore.open(db)) {
      dev.tether.test.SettableClock clock = new dev.tether.test.SettableClock(java.time.Instant.now());
      LeaseManager lm = new LeaseManager(s, "test",
          dev.tether.jdbc.LeaseManagerConfig.defaults().withClock(clock));
      Lease first = firstDelivery(lm);
      id = first.itemId();
      lm.release(first.itemId(), first.token(), false, null, "exit status 3: the first try broke");
      clock.advance(Duration.ofMinutes(1)); // past the retry's backoff
      Lease second = lm.acquire("default", Duration.ofMinutes(1)).orElseThrow();
      assertThat(second.deliveryCount()).isEqualTo(2);
    }
    String out = inspect(db, id);
    assertThat(out).as(out).containsPattern("(?m)^1 +released_failed .*the first try broke");
    // the item's last error is still shown as such, but not as how the running delivery ended
    assertThat(out).as(out).containsPattern("(?m)^2 +in_progress ")
        .doesNotContainPattern("(?m)^2 +in_progress .*the first try broke");
  }

  /** Enqueues the 'true' command on queue "default" and takes its first delivery. */
  private static Lease firstDelivery(LeaseManager lm) {
    lm.enqueue(NewWorkItem.builder("default").input(TRUE_COMMAND).build());
    return lm.acquire("default", Duration.ofMinutes(1)).orElseThrow();
  }
}
