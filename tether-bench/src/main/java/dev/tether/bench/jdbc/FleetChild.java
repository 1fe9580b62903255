package dev.tether.bench.jdbc;

import com.github.kagkarlsson.scheduler.Scheduler;
import com.github.kagkarlsson.scheduler.SchedulerName;
import com.github.kagkarlsson.scheduler.task.helper.OneTimeTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.tether.LeaseExtenderConfig;
import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.RecoverySweep;
import dev.tether.jdbc.RecoverySweepConfig;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import dev.tether.loop.LoopGroup;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.loop.WorkContext;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One worker process of {@link FleetBench}'s fleet: a Tether {@link LoopGroup} of {@code c}
 * {@link MainLoop}s on {@link JdbcMailbox}es (as {@code tether worker} builds, without its command
 * runner), or a db-scheduler 16.7.1 {@link Scheduler} with {@code c} threads, running simulated
 * jobs on PostgreSQL. Not a library class: it speaks to its parent on standard output, one event a
 * line ({@code READY}, {@code S key delivery micros}, {@code D key micros}, {@code M heapAfterGc
 * heapUsed}), and logs to standard error.
 *
 * <p>An item's body (Tether) or task instance id (db-scheduler) is {@code key:millis}: the job runs
 * that long, beating every second (Tether: {@link WorkContext#beat()}, which extends the lease at
 * most once per extension interval; db-scheduler: nothing, its own heartbeat updates every
 * executing job once per heartbeat interval), checkpointing every {@code checkpointMs} if set.
 *
 * <p>Arguments: {@code key=value} pairs: {@code engine} (tether|dbs), {@code url}, {@code name},
 * {@code c}, {@code pool}, {@code queue}; Tether: {@code visibilityMs}, {@code everyMs},
 * {@code extensionMs}, {@code sweepMs}, {@code retentionMs} (0: no purge), {@code checkpointMs};
 * db-scheduler: {@code heartbeatMs}, {@code missed}, {@code pollMs}; both: {@code memoryMs} (0:
 * none; else a full GC and an {@code M} line that often).
 */
public final class FleetChild {
  private FleetChild() {}

  private static final Object OUT_LOCK = new Object();
  private static final BufferedWriter OUT =
      new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));

  static void emit(String line) {
    synchronized (OUT_LOCK) {
      try {
        OUT.write(line);
        OUT.newLine();
        OUT.flush();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  static long nowMicros() {
    Instant i = Instant.now();
    return i.getEpochSecond() * 1_000_000L + i.getNano() / 1000;
  }

  /** The job of {@code key:millis}: runs that long, beating every second. */
  private static void runJob(String spec, int delivery, Runnable beat, Runnable checkpoint, long checkpointMs)
      throws InterruptedException {
    int colon = spec.lastIndexOf(':');
    String key = spec.substring(0, colon);
    long millis = Long.parseLong(spec.substring(colon + 1));
    emit("S " + key + " " + delivery + " " + nowMicros());
    long start = System.nanoTime();
    long end = start + TimeUnit.MILLISECONDS.toNanos(millis);
    long nextCheckpoint = checkpointMs > 0 ? start + TimeUnit.MILLISECONDS.toNanos(checkpointMs) : Long.MAX_VALUE;
    for (long now = start; now < end; now = System.nanoTime()) {
      TimeUnit.NANOSECONDS.sleep(Math.min(end - now, TimeUnit.SECONDS.toNanos(1)));
      beat.run();
      if (System.nanoTime() >= nextCheckpoint) {
        checkpoint.run();
        nextCheckpoint += TimeUnit.MILLISECONDS.toNanos(checkpointMs);
      }
    }
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> a = new HashMap<>();
    for (String s : args) {
      int eq = s.indexOf('=');
      a.put(s.substring(0, eq), s.substring(eq + 1));
    }
    long memoryMs = Long.parseLong(a.getOrDefault("memoryMs", "0"));
    if (memoryMs > 0) {
      Thread t = new Thread(() -> {
        try {
          while (true) {
            Thread.sleep(memoryMs);
            System.gc();
            long used = 0;
            for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
              if (p.getType() == MemoryType.HEAP) {
                used += p.getUsage().getUsed();
              }
            }
            emit("M " + used + " " + Thread.activeCount());
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }, "fleet-memory");
      t.setDaemon(true);
      t.start();
    }
    if (a.get("engine").equals("tether")) {
      runTether(a);
    } else {
      runDbScheduler(a);
    }
  }

  private static Duration ms(Map<String, String> a, String key, String dflt) {
    return Duration.ofMillis(Long.parseLong(a.getOrDefault(key, dflt)));
  }

  private static void runTether(Map<String, String> a) throws Exception {
    String name = a.get("name");
    int c = Integer.parseInt(a.get("c"));
    long checkpointMs = Long.parseLong(a.getOrDefault("checkpointMs", "0"));
    TetherStoreConfig storeConfig = TetherStoreConfig.builder()
        .maximumPoolSize(Integer.parseInt(a.getOrDefault("pool", "4")))
        .build();
    try (TetherStore store = TetherStore.open(a.get("url"), storeConfig)) {
      RecoverySweepConfig.Builder sweepConfig = RecoverySweepConfig.builder().scanInterval(ms(a, "sweepMs", "30000"));
      long retentionMs = Long.parseLong(a.getOrDefault("retentionMs", "0"));
      if (retentionMs > 0) {
        sweepConfig.finishedItemMaxAge(Duration.ofMillis(retentionMs)).cleanupInterval(Duration.ofMillis(retentionMs));
      }
      RecoverySweep sweep = new RecoverySweep(store, sweepConfig.build());
      MainLoopConfig loopConfig = MainLoopConfig.builder()
          .visibilityTimeout(ms(a, "visibilityMs", "60000"))
          .leaseExtender(LeaseExtenderConfig.of(ms(a, "everyMs", "10000"), ms(a, "extensionMs", "30000")))
          .build();
      List<MainLoop<String, String>> loops = new ArrayList<>();
      List<JdbcMailbox<String, String>> boxes = new ArrayList<>();
      for (int i = 1; i <= c; i++) {
        JdbcMailbox<String, String> box = JdbcMailbox.builder(store, a.getOrDefault("queue", "fleet"),
                dev.tether.Codec.utf8(), dev.tether.Codec.utf8())
            .holder(name + "/w" + i)
            .build();
        boxes.add(box);
        loops.add(MainLoop.builder("w" + i, box, (String body, WorkContext ctx) -> {
          runJob(body, ctx.deliveryCount(), ctx::beat,
              () -> ctx.checkpoint(Long.toString(System.currentTimeMillis())), checkpointMs);
          emit("D " + body.substring(0, body.lastIndexOf(':')) + " " + nowMicros());
          return "ok";
        }).config(loopConfig).build());
      }
      LoopGroup group = LoopGroup.builder().loops(loops).noHealthServer().noWatchdog().build();
      sweep.start();
      emit("READY " + ProcessHandle.current().pid());
      group.run(); // until SIGTERM (drains: hands back what still runs)
      sweep.stop();
      for (JdbcMailbox<String, String> b : boxes) {
        b.close();
      }
    }
  }

  private static void runDbScheduler(Map<String, String> a) throws Exception {
    String name = a.get("name");
    int c = Integer.parseInt(a.get("c"));
    HikariConfig hc = new HikariConfig();
    hc.setPoolName("dbs-" + name);
    hc.setJdbcUrl(a.get("url"));
    hc.setMaximumPoolSize(Integer.parseInt(a.getOrDefault("pool", "4")));
    try (HikariDataSource ds = new HikariDataSource(hc)) {
      OneTimeTask<Void> job = Tasks.oneTime("job").execute((inst, ctx) -> {
        try {
          runJob(inst.getId(), 0, () -> { }, () -> { }, 0);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted", e);
        }
        String id = inst.getId();
        emit("D " + id.substring(0, id.lastIndexOf(':')) + " " + nowMicros());
      });
      Scheduler scheduler = Scheduler.create(ds, job)
          .threads(c)
          .pollingInterval(ms(a, "pollMs", "100"))
          .pollUsingLockAndFetch(0.5, 1.0)
          .heartbeatInterval(ms(a, "heartbeatMs", "10000"))
          .missedHeartbeatsLimit(Integer.parseInt(a.getOrDefault("missed", "4")))
          .schedulerName(new SchedulerName.Fixed(name))
          .enablePriority()
          .shutdownMaxWait(Duration.ofSeconds(1))
          .build();
      Runtime.getRuntime().addShutdownHook(new Thread(scheduler::stop, "fleet-stop"));
      scheduler.start();
      emit("READY " + ProcessHandle.current().pid());
      Thread.currentThread().join(); // until killed
    }
  }
}
