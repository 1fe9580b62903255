package dev.tether.bench.jdbc;

import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import dev.tether.loop.LoopGroup;
import dev.tether.loop.MainLoop;
import dev.tether.loop.WorkContext;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What an idle worker costs the database: a {@link LoopGroup} of 8 {@link MainLoop}s receiving
 * from one {@link JdbcMailbox} on PostgreSQL with nothing to do; counts the index and sequential
 * scans of {@code tether_work_items} ({@code pg_stat_user_tables}) over a window. Measured, never
 * asserted.
 *
 * <p>Run: {@code java -cp tether-bench/target/benchmarks.jar dev.tether.bench.jdbc.IdleScans
 * [seconds]}; default 30. PostgreSQL from {@code TETHER_TEST_PG_URL} (default {@code
 * jdbc:postgresql://127.0.0.1:5432/test?user=postgres}), a fresh schema, dropped after.
 */
public final class IdleScans {
  private IdleScans() {}

  public static void main(String[] args) throws Exception {
    int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 30;
    try (BenchSchema schema = BenchSchema.create("tether_idle_");
        TetherStore store = TetherStore.open(schema.url(), TetherStoreConfig.defaults())) {
      JdbcMailbox<String, String> box = JdbcMailbox.ofStrings(store, "idle");
      List<MainLoop<String, String>> loops = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        loops.add(MainLoop.builder("idle-" + i, box, (String body, WorkContext ctx) -> body).build());
      }
      LoopGroup group = LoopGroup.builder().loops(loops).noHealthServer().handleSignals(false).build();
      Thread runner = new Thread(group::run, "idle-group");
      runner.start();
      Thread.sleep(4000); // loops started and waiting in receive
      long s0 = scans(schema);
      long t0 = System.nanoTime();
      Thread.sleep(seconds * 1000L);
      long s1 = scans(schema);
      double secs = (System.nanoTime() - t0) / 1e9;
      System.out.printf(Locale.ROOT, "idle LoopGroup of 8 MainLoops on one JdbcMailbox (PostgreSQL): %.1f scans of"
          + " tether_work_items a second over %.0f s%n", (s1 - s0) / secs, secs);
      group.shutdown(Duration.ofSeconds(10));
      runner.join(15000);
    }
  }

  private static long scans(BenchSchema schema) throws Exception {
    try (Connection c = schema.connect(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT coalesce(idx_scan, 0) + coalesce(seq_scan, 0) FROM pg_stat_user_tables"
            + " WHERE schemaname = '" + schema.name() + "' AND relname = 'tether_work_items'")) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
