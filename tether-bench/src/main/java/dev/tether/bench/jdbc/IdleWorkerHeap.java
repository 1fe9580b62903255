package dev.tether.bench.jdbc;

import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import dev.tether.loop.LoopGroup;
import dev.tether.loop.MainLoop;
import dev.tether.mailbox.Message;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Heap of an idle worker at library level (the CLI worker process is not measured here): a
 * {@link LoopGroup} of 8 {@link MainLoop}s (concurrency 8) receiving from one {@link JdbcMailbox}
 * with nothing to do, heap used after a full GC; and the heap per in-flight lease (2,000 messages
 * received and held, difference of heap after full GC, divided).
 *
 * <p>Run: {@code java -cp tether-bench/target/benchmarks.jar dev.tether.bench.jdbc.IdleWorkerHeap
 * [sqlite|postgres]}.
 */
public final class IdleWorkerHeap {
  private IdleWorkerHeap() {}

  public static void main(String[] args) throws Exception {
    boolean pg = args.length > 0 && args[0].equals("postgres");
    BenchSchema schema = pg ? BenchSchema.create("tether_heap_") : null;
    String url;
    if (schema != null) {
      url = schema.url();
    } else {
      url = Files.createTempDirectory("tether-heap").resolve("idle.db").toString();
    }
    MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
    long before = usedAfterGc(mem);
    try (TetherStore store = TetherStore.open(url, TetherStoreConfig.defaults())) {
      JdbcMailbox<String, String> box = JdbcMailbox.ofStrings(store, "idle");
      List<MainLoop<String, String>> loops = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        loops.add(MainLoop.builder("idle-" + i, box, (String body, dev.tether.loop.WorkContext ctx) -> body).build());
      }
      LoopGroup group = LoopGroup.builder().loops(loops).noHealthServer().handleSignals(false).build();
      Thread runner = new Thread(group::run, "idle-group");
      runner.start();
      Thread.sleep(3000); // loops started and waiting in receive
      long idle = usedAfterGc(mem);
      System.out.printf(Locale.ROOT, "idle worker (%s, LoopGroup of 8 MainLoops over one JdbcMailbox): heap after full GC %.1f MB"
          + " (JVM baseline before opening the store %.1f MB)%n", pg ? "PostgreSQL" : "SQLite", idle / 1048576.0, before / 1048576.0);
      group.shutdown(Duration.ofSeconds(10));
      runner.join(15000);

      // memory per in-flight lease: receive and hold 2,000 messages
      int n = 2000;
      List<NewWorkItem> items = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        items.add(NewWorkItem.of("held", "payload-" + i));
      }
      new LeaseManager(store, "producer").enqueueAll(items);
      JdbcMailbox<String, String> held = JdbcMailbox.ofStrings(store, "held");
      long empty = usedAfterGc(mem);
      List<Message<String, String>> inFlight = new ArrayList<>();
      while (inFlight.size() < n) {
        inFlight.addAll(held.receive(10, Duration.ofMinutes(5), Duration.ZERO));
      }
      long full = usedAfterGc(mem);
      System.out.printf(Locale.ROOT, "memory per in-flight lease (JdbcMessage with a 9-byte body): %.0f bytes (%d held)%n",
          (full - empty) / (double) n, inFlight.size());
    } finally {
      if (schema != null) {
        schema.close();
      }
    }
  }

  private static long usedAfterGc(MemoryMXBean mem) throws InterruptedException {
    for (int i = 0; i < 3; i++) {
      System.gc();
      Thread.sleep(100);
    }
    return mem.getHeapMemoryUsage().getUsed();
  }
}
