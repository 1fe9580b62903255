package dev.tether.bench.jdbc;

import dev.tether.jdbc.AcquireRequest;
import dev.tether.jdbc.Lease;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Acquisition cost with a backlog of delayed items (a retry storm's backoffs, scheduled work):
 * {@code delayed} items not due for an hour, enqueued before {@code due} items that are due now;
 * one thread drains the due ones ({@code acquire(batch 10)} + {@code complete} each) and the
 * figure is the time per acquisition with its ten completions, beside the same drain with no
 * delayed backlog in the same run. Measured, never asserted.
 *
 * <p>Run: {@code java -cp tether-bench/target/benchmarks.jar dev.tether.bench.jdbc.DelayedBacklog
 * [sqlite|postgres|both] [delayed] [due]}; defaults both, 100000, 2000. PostgreSQL from {@code
 * TETHER_TEST_PG_URL} (default {@code jdbc:postgresql://127.0.0.1:5432/test?user=postgres}), a
 * fresh schema per run, dropped after; SQLite a temp file (WAL, synchronous=NORMAL).
 */
public final class DelayedBacklog {
  private DelayedBacklog() {}

  public static void main(String[] args) throws Exception {
    String which = args.length > 0 ? args[0] : "both";
    int delayed = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
    int due = args.length > 2 ? Integer.parseInt(args[2]) : 2000;
    for (String engine : List.of("sqlite", "postgres")) {
      if (!which.equals("both") && !which.equals(engine)) {
        continue;
      }
      for (int backlog : new int[] {0, delayed, 0, delayed}) {
        run(engine, backlog, due);
      }
    }
  }

  private static void run(String engine, int delayed, int due) throws Exception {
    BenchSchema pg = null;
    Path dir = null;
    String url;
    if (engine.equals("postgres")) {
      pg = BenchSchema.create("tether_delayed_");
      url = pg.url();
    } else {
      dir = Files.createTempDirectory("tether-delayed");
      url = dir.resolve("bench.db").toString();
    }
    try (TetherStore store = TetherStore.open(url, TetherStoreConfig.defaults())) {
      LeaseManager w = new LeaseManager(store, "bench");
      List<NewWorkItem> batch = new ArrayList<>();
      for (int i = 0; i < delayed; i++) {
        batch.add(NewWorkItem.builder("q").input("later").delay(Duration.ofHours(1)).build());
        if (batch.size() == 1000) {
          w.enqueueAll(batch);
          batch.clear();
        }
      }
      for (int i = 0; i < due; i++) {
        batch.add(NewWorkItem.of("q", "now"));
      }
      w.enqueueAll(batch);
      long t0 = System.nanoTime();
      int done = 0;
      int acquisitions = 0;
      while (done < due) {
        List<Lease> got = w.acquire(AcquireRequest.batch("q", Duration.ofMinutes(5), 10));
        acquisitions++;
        if (got.isEmpty()) {
          throw new IllegalStateException("no due item left after " + done + " of " + due);
        }
        for (Lease l : got) {
          w.complete(l.itemId(), l.token(), null);
          done++;
        }
      }
      double ms = (System.nanoTime() - t0) / 1e6;
      System.out.printf(Locale.ROOT, "%-8s delayed backlog %,7d: %,d due items in %,.0f ms,"
          + " %.2f ms per acquisition of 10 with its completions%n",
          engine, delayed, due, ms, ms / acquisitions);
    } finally {
      if (pg != null) {
        pg.close();
      } else {
        try (var files = Files.walk(dir)) {
          files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
      }
    }
  }
}
