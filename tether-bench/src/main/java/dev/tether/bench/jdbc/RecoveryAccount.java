package dev.tether.bench.jdbc;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The accounting of one crash-recovery run of {@link FleetBench}: from the start and done events
 * the fleet's workers reported, which items the killed worker held, when each ran again on another
 * worker, and whether each ran exactly once more and completed exactly once. Pure and stateless.
 */
final class RecoveryAccount {
  private RecoveryAccount() {}

  /** What a worker reported about an item. */
  enum Kind {
    /** The handler started (a delivery began to run). */
    START,
    /** The handler finished and the item was acknowledged. */
    DONE
  }

  /**
   * One event, as a worker process reported it.
   *
   * @param kind start or done
   * @param key the item's key (the same on every delivery)
   * @param worker the worker process's name
   * @param atMicros when, in microseconds since the epoch (one host, one clock)
   */
  record Event(Kind kind, String key, String worker, long atMicros) {
    Event {
      Objects.requireNonNull(kind, "kind");
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(worker, "worker");
    }
  }

  /**
   * The outcome.
   *
   * @param held items the victim had started and not finished when it was killed
   * @param restarted how many of them started again on another worker
   * @param firstMs from the kill to the first of them starting again (-1 if none did)
   * @param lastMs from the kill to the last of them starting again (-1 if not all did)
   * @param violations every breach of "each held item runs exactly once more and completes once;
   *     every other item runs and completes at most once", one line each
   */
  record Result(int held, int restarted, double firstMs, double lastMs, List<String> violations) {
    /** True when every held item ran again and nothing broke the exactly-once-more rule. */
    boolean clean() {
      return held > 0 && restarted == held && violations.isEmpty();
    }
  }

  /**
   * Accounts one run.
   *
   * @param victim the killed worker's name
   * @param killMicros when it was killed (epoch microseconds)
   * @param events every event of the run, from every worker, in any order
   * @return the accounting
   */
  static Result account(String victim, long killMicros, List<Event> events) {
    Map<String, List<Event>> byKey = new HashMap<>();
    for (Event e : events) {
      byKey.computeIfAbsent(e.key(), k -> new ArrayList<>()).add(e);
    }
    Set<String> held = new LinkedHashSet<>();
    List<String> violations = new ArrayList<>();
    for (Event e : events) {
      if (e.worker().equals(victim) && e.atMicros() >= killMicros) {
        violations.add(e.key() + ": the killed worker reported " + e.kind() + " after the kill");
      }
    }
    for (Map.Entry<String, List<Event>> en : byKey.entrySet()) {
      boolean startedOnVictim = false;
      boolean doneOnVictim = false;
      for (Event e : en.getValue()) {
        if (e.worker().equals(victim) && e.atMicros() < killMicros) {
          startedOnVictim |= e.kind() == Kind.START;
          doneOnVictim |= e.kind() == Kind.DONE;
        }
      }
      if (startedOnVictim && !doneOnVictim) {
        held.add(en.getKey());
      }
    }
    double first = Double.MAX_VALUE;
    double last = -1;
    int restarted = 0;
    for (Map.Entry<String, List<Event>> en : byKey.entrySet()) {
      String key = en.getKey();
      int starts = 0;
      int dones = 0;
      int restarts = 0;
      long restartAt = -1;
      String restartWorker = null;
      String doneWorker = null;
      for (Event e : en.getValue()) {
        if (e.kind() == Kind.START) {
          starts++;
          if (held.contains(key) && !e.worker().equals(victim) && e.atMicros() >= killMicros) {
            restarts++;
            restartAt = e.atMicros();
            restartWorker = e.worker();
          }
        } else {
          dones++;
          doneWorker = e.worker();
        }
      }
      if (held.contains(key)) {
        if (restarts == 0) {
          violations.add(key + ": held by the killed worker, never ran again");
        } else if (restarts > 1) {
          violations.add(key + ": held by the killed worker, ran " + restarts + " times again");
        } else {
          restarted++;
          double ms = (restartAt - killMicros) / 1000.0;
          first = Math.min(first, ms);
          last = Math.max(last, ms);
        }
        if (starts != restarts + 1) {
          violations.add(key + ": " + starts + " starts in all, expected " + (restarts + 1));
        }
        if (dones != 1) {
          violations.add(key + ": held by the killed worker, completed " + dones + " times");
        } else if (restarts == 1 && !doneWorker.equals(restartWorker)) {
          violations.add(key + ": completed by " + doneWorker + ", which did not run it again ("
              + restartWorker + " did)");
        }
      } else {
        if (starts > 1) {
          violations.add(key + ": not held by the killed worker, yet started " + starts + " times");
        }
        if (dones > 1) {
          violations.add(key + ": completed " + dones + " times");
        }
        if (dones > starts) {
          violations.add(key + ": completed without a start");
        }
      }
    }
    violations.sort(null);
    return new Result(held.size(), restarted, restarted == 0 ? -1 : first,
        restarted == held.size() && restarted > 0 ? last : -1, List.copyOf(violations));
  }
}
