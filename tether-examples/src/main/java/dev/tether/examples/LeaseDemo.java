package dev.tether.examples;

import dev.tether.LeaseExtender;
import dev.tether.LeaseExtenderConfig;
import dev.tether.loop.Handler;
import dev.tether.loop.LoopGroup;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.loop.WorkContext;
import dev.tether.mailbox.DeadLetterPolicy;
import dev.tether.mailbox.InMemoryMailbox;
import dev.tether.mailbox.Message;
import java.time.Duration;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Tether's main job on the in-memory mailbox, narrated: two workers process a few long jobs whose
 * handlers beat as they make progress, so their leases are extended; one job's first worker gets
 * stuck (stops beating), loses its lease, and the job is redelivered to the other worker; a flaky
 * job fails once and is retried. Ends by itself in about fifteen seconds.
 *
 * <p>Run: {@code mvn -q -pl tether-examples -am test-compile exec:java}
 */
public final class LeaseDemo {
  private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.S");
  private static final Map<String, String> outcome = new ConcurrentHashMap<>();
  private static final Map<String, Integer> deliveries = new ConcurrentHashMap<>();

  private LeaseDemo() {}

  /**
   * Runs the demo.
   *
   * @param args ignored
   * @throws Exception if interrupted
   */
  public static void main(String[] args) throws Exception {
    say("main", "Tether demo: 2 workers, visibility timeout 3 s, lease extended by 2 s at most every 0.5 s while handlers beat");
    InMemoryMailbox<String, String> jobs =
        InMemoryMailbox.<String, String>builder("jobs").maxAttempts(3).build();
    String[] names = {"compile", "test-suite", "stuck-report", "flaky-upload"};
    for (String name : names) {
      jobs.send(name);
    }
    CountDownLatch finished = new CountDownLatch(names.length);

    MainLoopConfig config =
        MainLoopConfig.builder()
            .visibilityTimeout(Duration.ofSeconds(3))
            .leaseExtender(LeaseExtenderConfig.of(Duration.ofMillis(500), Duration.ofSeconds(2)))
            .waitTime(Duration.ofMillis(500))
            .deadLetterPolicy(
                DeadLetterPolicy.builder()
                    .backoff(Duration.ofMillis(500), Duration.ofSeconds(2))
                    .build())
            .build();

    LoopGroup.Builder group = LoopGroup.builder().noWatchdog().handleSignals(true);
    for (String worker : new String[] {"worker-a", "worker-b"}) {
      group.loop(
          MainLoop.builder(worker, jobs, handler(worker))
              .config(config)
              .listener(new Narrator(worker, finished))
              .extenderListener(new ExtensionNarrator(worker))
              .build());
    }
    LoopGroup loops = group.build();
    Thread runner = new Thread(loops::run, "demo-group");
    runner.start();

    boolean done = finished.await(60, TimeUnit.SECONDS);
    loops.shutdown();
    runner.join(TimeUnit.SECONDS.toMillis(35));

    System.out.println();
    System.out.printf("%-14s %-11s %s%n", "JOB", "DELIVERIES", "OUTCOME");
    for (String name : names) {
      System.out.printf(
          "%-14s %-11d %s%n", name, deliveries.getOrDefault(name, 0), outcome.getOrDefault(name, "?"));
    }
    System.out.println(done ? "\nAll jobs finished; nothing lost." : "\nTimed out waiting for jobs.");
    jobs.close();
  }

  private static Handler<String, String> handler(String worker) {
    return (String job, WorkContext ctx) -> {
      deliveries.merge(job, 1, Integer::sum);
      switch (job) {
        case "stuck-report":
          if (ctx.deliveryCount() == 1) {
            say(worker, job + ": handler hangs (no beats) ...");
            Thread.sleep(6_000); // stuck: no beats, so no extension; the lease expires after 3 s
            say(worker, job + ": woke up after 6 s (it never beat, so its lease was not extended); finishing anyway");
            return "late result";
          }
          return work(worker, job, ctx, 2);
        case "flaky-upload":
          if (ctx.deliveryCount() == 1) {
            Thread.sleep(300);
            throw new IllegalStateException("connection reset by peer");
          }
          return work(worker, job, ctx, 2);
        default:
          return work(worker, job, ctx, job.equals("compile") ? 4 : 6);
      }
    };
  }

  private static String work(String worker, String job, WorkContext ctx, int steps)
      throws InterruptedException {
    for (int i = 1; i <= steps; i++) {
      Thread.sleep(700); // real work...
      ctx.beat(); // ...proves progress, which may extend the lease
    }
    return job + " ok";
  }

  private static void say(String who, String what) {
    System.out.printf("%s [%-8s] %s%n", LocalTime.now().format(TIME), who, what);
  }

  private static final class Narrator implements MainLoop.Listener {
    private final String worker;
    private final CountDownLatch finished;

    Narrator(String worker, CountDownLatch finished) {
      this.worker = worker;
      this.finished = finished;
    }

    @Override
    public void received(Message<?, ?> m) {
      say(worker, "received " + m.body() + " (delivery " + m.deliveryCount() + ")");
    }

    @Override
    public void completed(Message<?, ?> m, Duration took) {
      say(worker, "completed " + m.body() + " in " + took.toMillis() + " ms, acknowledged");
      outcome.put((String) m.body(), "completed by " + worker + " on delivery " + m.deliveryCount());
      finished.countDown();
    }

    @Override
    public void failed(Message<?, ?> m, Exception e, DeadLetterPolicy.Decision d, Duration took) {
      say(worker, m.body() + " failed (" + e.getMessage() + "): " + d);
      if (d.isDeadLetter()) {
        outcome.put((String) m.body(), "dead-lettered");
        finished.countDown();
      }
    }

    @Override
    public void leaseLost(Message<?, ?> m) {
      say(worker, "lease on " + m.body() + " was lost: result refused (another worker owns it)");
    }
  }

  private static final class ExtensionNarrator implements LeaseExtender.Listener {
    private final String worker;

    ExtensionNarrator(String worker) {
      this.worker = worker;
    }

    @Override
    public void extended(Message<?, ?> m, Duration extension) {
      say(worker, "  lease on " + m.body() + " extended by " + extension.toMillis() + " ms");
    }
  }
}
