package dev.tether.bench.jdbc;

import static dev.tether.bench.jdbc.RecoveryAccount.Kind.DONE;
import static dev.tether.bench.jdbc.RecoveryAccount.Kind.START;
import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.bench.jdbc.RecoveryAccount.Event;
import dev.tether.bench.jdbc.RecoveryAccount.Result;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class RecoveryAccountTest {
  private static final long KILL = 1_000_000_000L;

  private static Event e(RecoveryAccount.Kind k, String key, String worker, long offsetMs) {
    return new Event(k, key, worker, KILL + offsetMs * 1000);
  }

  /** Two items held by w0 at the kill, each run again once on a survivor and completed there. */
  private static List<Event> cleanRun() {
    List<Event> ev = new ArrayList<>();
    ev.add(e(START, "a", "w0", -5000));
    ev.add(e(START, "b", "w0", -4000));
    ev.add(e(START, "c", "w0", -9000));
    ev.add(e(DONE, "c", "w0", -1000)); // finished before the kill: not held
    ev.add(e(START, "a", "w1", 1200));
    ev.add(e(START, "b", "w2", 3400));
    ev.add(e(DONE, "a", "w1", 21200));
    ev.add(e(DONE, "b", "w2", 23400));
    return ev;
  }

  @Test
  void heldItemsRunOnceMoreElsewhereGiveFirstAndLastRestart() {
    Result r = RecoveryAccount.account("w0", KILL, cleanRun());

    assertThat(r.held()).isEqualTo(2);
    assertThat(r.restarted()).isEqualTo(2);
    assertThat(r.firstMs()).isEqualTo(1200.0);
    assertThat(r.lastMs()).isEqualTo(3400.0);
    assertThat(r.violations()).isEmpty();
    assertThat(r.clean()).isTrue();
  }

  @Test
  void anItemRunTwiceAfterTheKillIsAViolation() {
    List<Event> ev = cleanRun();
    ev.add(e(START, "a", "w2", 1500));

    Result r = RecoveryAccount.account("w0", KILL, ev);

    assertThat(r.clean()).isFalse();
    assertThat(r.violations()).anyMatch(v -> v.startsWith("a: held by the killed worker, ran 2 times again"));
  }

  @Test
  void aHeldItemThatNeverRanAgainLeavesLastUnknown() {
    List<Event> ev = cleanRun();
    ev.removeIf(x -> x.key().equals("b") && !x.worker().equals("w0"));

    Result r = RecoveryAccount.account("w0", KILL, ev);

    assertThat(r.restarted()).isEqualTo(1);
    assertThat(r.lastMs()).isEqualTo(-1);
    assertThat(r.violations()).contains("b: held by the killed worker, never ran again",
        "b: held by the killed worker, completed 0 times");
  }

  @Test
  void aDoubleCompletionIsAViolationEvenForAnItemTheVictimNeverHeld() {
    List<Event> ev = cleanRun();
    ev.add(e(DONE, "a", "w1", 21300));
    ev.add(e(START, "d", "w1", 100));
    ev.add(e(DONE, "d", "w1", 200));
    ev.add(e(DONE, "d", "w2", 300));

    Result r = RecoveryAccount.account("w0", KILL, ev);

    assertThat(r.violations()).contains("a: held by the killed worker, completed 2 times", "d: completed 2 times");
  }

  @Test
  void aCompletionByAWorkerOtherThanTheOneThatRanItAgainIsAViolation() {
    List<Event> ev = cleanRun();
    ev.removeIf(x -> x.key().equals("a") && x.kind() == DONE);
    ev.add(e(DONE, "a", "w2", 21200));

    Result r = RecoveryAccount.account("w0", KILL, ev);

    assertThat(r.violations()).containsExactly("a: completed by w2, which did not run it again (w1 did)");
  }

  @Test
  void theKilledWorkerReportingAfterTheKillIsAViolation() {
    List<Event> ev = cleanRun();
    ev.add(e(DONE, "a", "w0", 10));

    Result r = RecoveryAccount.account("w0", KILL, ev);

    assertThat(r.violations()).contains("a: the killed worker reported DONE after the kill");
  }
}
