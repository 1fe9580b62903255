package dev.tether.bench.jdbc;

import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.QueueAdmin;
import dev.tether.jdbc.TetherStore;
import dev.tether.mailbox.Message;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * What watching held messages for cancellation costs a worker process, and how soon a
 * cancellation by another process reaches the holder. For each number of watched messages:
 * a store with a backlog of {@code items} pending items, that many messages received and each
 * {@linkplain Message#watchCancellation watched}; then {@code seconds} of idle watching, measured
 * as the CPU time of the store's watch thread ({@code tether-cancel-watch-*}) and its checks; then
 * one message cancelled through a second store (another process's view) and the time until its
 * callback ran.
 *
 * <p>On SQLite the watch checks every 500 ms (one primary-key statement per 16 watched items); on
 * PostgreSQL a cancellation arrives as a notification and the check is a 5 s backstop.
 *
 * <p>Run: {@code java -cp tether-bench/target/benchmarks.jar dev.tether.bench.jdbc.CancelWatchCost
 * [sqlite|postgres] [items] [seconds]}; defaults sqlite, 100000, 10.
 */
public final class CancelWatchCost {
  private CancelWatchCost() {}

  public static void main(String[] args) throws Exception {
    String engine = args.length > 0 ? args[0] : "sqlite";
    int items = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
    int seconds = args.length > 2 ? Integer.parseInt(args[2]) : 10;
    for (int watched : new int[] {1, 16, 64}) {
      run(engine, items, seconds, watched);
    }
  }

  private static void run(String engine, int items, int seconds, int watched) throws Exception {
    Path dir = null;
    BenchSchema schema = null;
    String url;
    if (engine.equals("postgres")) {
      schema = BenchSchema.create("tether_cancel_");
      url = schema.url();
    } else {
      dir = Files.createTempDirectory("tether-cancel-bench");
      url = dir.resolve("bench.db").toString();
    }
    try (TetherStore store = TetherStore.open(url); TetherStore operator = TetherStore.open(url)) {
      LeaseManager producer = new LeaseManager(store, "producer");
      for (int done = 0; done < items; done += 1000) {
        List<NewWorkItem> chunk = new ArrayList<>();
        for (int i = done; i < Math.min(items, done + 1000); i++) {
          chunk.add(NewWorkItem.of("cancel", "job-" + i));
        }
        producer.enqueueAll(chunk);
      }
      JdbcMailbox<String, String> box = JdbcMailbox.ofStrings(store, "cancel");
      List<Message<String, String>> held = new ArrayList<>();
      while (held.size() < watched) {
        held.addAll(box.receive(Math.min(10, watched - held.size()), Duration.ofMinutes(10), Duration.ZERO));
      }
      CountDownLatch told = new CountDownLatch(1);
      List<Message.Subscription> subs = new ArrayList<>();
      for (int i = 0; i < held.size(); i++) {
        subs.add(held.get(i).watchCancellation(i == 0 ? told::countDown : () -> { }));
      }
      Thread.sleep(1000); // the watch thread starts and settles
      ThreadMXBean tmx = ManagementFactory.getThreadMXBean();
      long watchThread = Thread.getAllStackTraces().keySet().stream()
          .filter(t -> t.getName().startsWith("tether-cancel-watch-")).mapToLong(Thread::getId)
          .max().orElseThrow(() -> new IllegalStateException("no watch thread"));
      long cpu0 = tmx.getThreadCpuTime(watchThread);
      long wall0 = System.nanoTime();
      Thread.sleep(seconds * 1000L);
      long cpu = tmx.getThreadCpuTime(watchThread) - cpu0;
      double wall = (System.nanoTime() - wall0) / 1e9;

      long start = System.nanoTime();
      new QueueAdmin(operator).cancel(Long.parseLong(held.get(0).id()), "bench");
      long committed = System.nanoTime();
      boolean reached = told.await(30, TimeUnit.SECONDS);
      double latencyMs = (System.nanoTime() - committed) / 1e6;
      subs.forEach(Message.Subscription::close);
      double checksPerSecond = engine.equals("postgres") ? 1 / 5.0 : 1 / 0.5;
      int statementsPerCheck = (watched + 15) / 16;
      System.out.printf(Locale.ROOT, "%s backlog=%d watched=%d: watch thread %.3f ms CPU per second"
              + " (%.1f%% of one core); %.1f checks/s x %d statements; cancel -> holder told %s"
              + " (%.0f ms; the cancel itself %.0f ms)%n",
          engine, items, watched, cpu / 1e6 / wall, cpu / 1e7 / wall, checksPerSecond,
          statementsPerCheck, reached ? "yes" : "NO", latencyMs, (committed - start) / 1e6);
    } finally {
      if (schema != null) {
        schema.close();
      }
      if (dir != null) {
        try (var files = Files.walk(dir)) {
          files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
      }
    }
  }
}
