package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.Codec;
import dev.tether.mailbox.Message;
import dev.tether.mailbox.OutputTail;
import dev.tether.test.SettableTicker;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * A delivery's output tails: carried on its lease renewals, and kept with the delivery by the
 * checkpoint that ends it, whatever ends it (failure, expiry, hand-back, cancellation), on every
 * engine (subclass per engine).
 */
abstract class OutputTailCompatibilityTest extends StoreTestBase {
  static final Duration LEASE = Duration.ofSeconds(30);

  private static OutputTail tail(String out, String err) {
    return new OutputTail(out, err, out.length() + err.length(), Duration.ZERO, Duration.ZERO);
  }

  private JdbcMailbox<String, String> mailbox() {
    return JdbcMailbox.builder(store, "q", Codec.utf8(), Codec.utf8()).clock(clock).maxAttempts(10).build();
  }

  private WorkItem item(String id) {
    return new LeaseManager(store, "reader").find(Long.parseLong(id)).orElseThrow();
  }

  private Message<String, String> receive(JdbcMailbox<String, String> m) {
    List<Message<String, String>> got = m.receive(1, LEASE, Duration.ZERO);
    assertThat(got).hasSize(1);
    return got.get(0);
  }

  @Test
  void aRenewalCarriesTheLatestOutputAndEveryEndingKeepsItsDeliverysTails() {
    JdbcMailbox<String, String> m = mailbox();
    String id = m.send("work");

    // delivery 1: output carried on a renewal, then a failure with its final output
    Message<String, String> d1 = receive(m);
    String[] out = {"connecting...\n", "step 1 done\n"};
    d1.reportOutput(() -> tail(out[0], out[1]));
    d1.extendVisibility(LEASE);
    WorkItem running = item(id);
    assertThat(running.stdoutTail()).isEqualTo("connecting...\n");
    assertThat(running.stderrTail()).isEqualTo("step 1 done\n");
    assertThat(running.outputDelivery()).isEqualTo(1);
    out[0] = "connecting...\nfailing\n";
    d1.nack(Duration.ZERO, "exit status 1");

    // delivery 2: output carried, then the worker dies and its lease expires
    Message<String, String> d2 = receive(m);
    d2.reportOutput(() -> tail("hung here\n", ""));
    d2.extendVisibility(LEASE);
    clock.advance(LEASE.plusSeconds(1));
    new RecoverySweep(store).scanAndRecover();

    // delivery 3: handed back with its final output, no renewal needed
    Message<String, String> d3 = receive(m);
    d3.reportOutput(() -> tail("draining\n", "bye\n"));
    d3.handBack();

    // delivery 4: output written without an extension, then cancelled by an operator
    Message<String, String> d4 = receive(m);
    d4.reportOutput(() -> tail("quiet now\n", ""));
    d4.flushOutput();
    assertThat(new QueueAdmin(store).cancel(Long.parseLong(id), "operator")).isTrue();

    Map<String, Checkpoint> byKind = item(id).checkpoints().stream()
        .collect(Collectors.toMap(Checkpoint::kind, c -> c));
    assertThat(byKind.get(Checkpoint.RELEASED_FAILED))
        .satisfies(c -> assertThat(c.deliveryCount()).isEqualTo(1))
        .satisfies(c -> assertThat(c.stdoutTail()).isEqualTo("connecting...\nfailing\n"))
        .satisfies(c -> assertThat(c.stderrTail()).isEqualTo("step 1 done\n"));
    assertThat(byKind.get(Checkpoint.LEASE_EXPIRED))
        .satisfies(c -> assertThat(c.deliveryCount()).isEqualTo(2))
        .satisfies(c -> assertThat(c.stdoutTail()).isEqualTo("hung here\n"));
    assertThat(byKind.get(Checkpoint.HANDED_BACK))
        .satisfies(c -> assertThat(c.deliveryCount()).isEqualTo(3))
        .satisfies(c -> assertThat(c.stdoutTail()).isEqualTo("draining\n"))
        .satisfies(c -> assertThat(c.stderrTail()).isEqualTo("bye\n"));
    assertThat(byKind.get(Checkpoint.CANCELLED))
        .satisfies(c -> assertThat(c.deliveryCount()).isEqualTo(4))
        .satisfies(c -> assertThat(c.stdoutTail()).isEqualTo("quiet now\n"));
  }

  /**
   * A hung command's last output is kept although an extension carrying an older snapshot of it
   * lands after the flush of the newer one: the command printed to stderr (a beat: an extension
   * takes the output then, and waits for its renewal batch), then to stdout, then went quiet, so
   * the worker flushed the newer output while the extension was still queued. Without the
   * extension writing the output again, the older snapshot stays, and the expired delivery shows
   * an empty stdout (as {@code OutputTailsIT} once saw on a loaded machine).
   */
  @Test
  void anExtensionWithAnOlderSnapshotLandingAfterAFlushOfNewerOutputLeavesTheNewer() throws Exception {
    JdbcMailbox<String, String> m = mailbox();
    String id = m.send("work");
    String other = m.send("other");
    List<Message<String, String>> got = m.receive(2, LEASE, Duration.ZERO);
    assertThat(got).hasSize(2);
    Message<String, String> d = got.get(0).id().equals(id) ? got.get(0) : got.get(1);
    Message<String, String> o = got.get(0).id().equals(other) ? got.get(0) : got.get(1);
    String[] out = {"", "step 1 done\n"};
    d.reportOutput(() -> tail(out[0], out[1]));

    RenewalBatcher batcher = store.renewalBatcher();
    SettableTicker ticker = new SettableTicker();
    CountDownLatch paused = new CountDownLatch(1);
    CountDownLatch resume = new CountDownLatch(1);
    batcher.pacing(ticker, nanos -> {
      paused.countDown();
      try {
        assertThat(resume.await(30, TimeUnit.SECONDS)).isTrue();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      ticker.advance(Duration.ofNanos(nanos));
    });
    o.extendVisibility(LEASE); // a batch now: the next one waits out the gap, held above
    ticker.advance(Duration.ofMillis(1));

    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      Future<?> extension = pool.submit(() -> d.extendVisibility(LEASE)); // takes stderr only
      assertThat(paused.await(30, TimeUnit.SECONDS)).as("the extension waits for its batch").isTrue();
      out[0] = "connecting...\n";
      d.flushOutput(); // the command went quiet: its newer output is written at once
      assertThat(item(id).stdoutTail()).isEqualTo("connecting...\n");
      resume.countDown(); // the older snapshot lands now
      extension.get(30, TimeUnit.SECONDS);
    } finally {
      pool.shutdownNow();
    }
    WorkItem after = item(id);
    assertThat(after.stdoutTail()).as("stdout after the late extension").isEqualTo("connecting...\n");
    assertThat(after.stderrTail()).isEqualTo("step 1 done\n");
  }

  @Test
  void aDeliveryThatReportedNothingKeepsNoTailsOfAnEarlierOne() {
    JdbcMailbox<String, String> m = mailbox();
    String id = m.send("work");
    Message<String, String> d1 = receive(m);
    d1.reportOutput(() -> tail("first\n", ""));
    d1.nack(Duration.ZERO, "failed");
    Message<String, String> d2 = receive(m);
    d2.extendVisibility(LEASE);
    clock.advance(LEASE.plusSeconds(1));
    new RecoverySweep(store).scanAndRecover();
    Checkpoint expired = item(id).checkpoints().stream()
        .filter(c -> c.kind().equals(Checkpoint.LEASE_EXPIRED)).findFirst().orElseThrow();
    assertThat(expired.deliveryCount()).isEqualTo(2);
    assertThat(expired.stdoutTail()).isNull();
    assertThat(item(id).outputDelivery()).isEqualTo(1);
  }

  @Test
  void theLastBeatAndLastOutputAreOnTheStoresClockNeverBeforeTheLease() {
    JdbcMailbox<String, String> m = mailbox();
    String id = m.send("work");
    Message<String, String> d = receive(m);
    Instant acquired = clock.instant();
    clock.advance(Duration.ofSeconds(10));
    d.reportOutput(() -> new OutputTail("x", "", 1, Duration.ofSeconds(4), Duration.ofSeconds(3)));
    d.extendVisibility(LEASE);
    WorkItem w = item(id);
    assertThat(w.outputAt()).isEqualTo(clock.instant().minusSeconds(4));
    assertThat(w.heartbeatAt()).isEqualTo(clock.instant().minusSeconds(3));

    clock.advance(Duration.ofSeconds(1));
    d.reportOutput(() -> new OutputTail("xy", "", 2, Duration.ZERO, Duration.ofHours(1)));
    d.extendVisibility(LEASE);
    assertThat(item(id).heartbeatAt()).isEqualTo(acquired);
  }

  @Test
  void outputWhoseAgesAreUnknownKeepsTheRowsInstantsOnARenewalAndAHandBack() {
    JdbcMailbox<String, String> m = mailbox();
    String id = m.send("work");
    Message<String, String> d = receive(m);
    clock.advance(Duration.ofSeconds(5));
    // null ages: "unknown" (OutputTail allows it); PostgreSQL could not type the null before
    d.reportOutput(() -> new OutputTail("no clock here\n", "", 14, null, null));
    d.extendVisibility(LEASE);
    WorkItem renewed = item(id);
    assertThat(renewed.stdoutTail()).isEqualTo("no clock here\n");
    // the renewal's own beat: with the beat's age unknown, the output does not move it
    assertThat(renewed.heartbeatAt()).isEqualTo(clock.instant());
    assertThat(renewed.leaseExpiresAt()).isEqualTo(clock.instant().plus(LEASE));

    d.reportOutput(() -> new OutputTail("no clock here\nbye\n", "", 18, null, null));
    d.handBack();
    WorkItem back = item(id);
    assertThat(back.status()).isEqualTo(WorkStatus.PENDING);
    assertThat(back.attempts()).as("a hand-back is not charged").isZero();
    Checkpoint handedBack = back.checkpoints().stream()
        .filter(c -> c.kind().equals(Checkpoint.HANDED_BACK)).findFirst().orElseThrow();
    assertThat(handedBack.stdoutTail()).isEqualTo("no clock here\nbye\n");
  }

  @Test
  void tailsAreBoundedToTheirEnd() {
    String longText = "a".repeat(OutputTail.MAX_CHARS) + "END";
    OutputTail t = new OutputTail(longText, "", longText.length(), null, null);
    assertThat(t.stdout()).hasSize(OutputTail.MAX_CHARS).endsWith("END");
  }
}
