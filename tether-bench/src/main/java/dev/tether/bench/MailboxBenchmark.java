package dev.tether.bench;

import dev.tether.loop.MainLoop;
import dev.tether.mailbox.InMemoryMailbox;
import dev.tether.mailbox.Message;
import dev.tether.micrometer.TetherMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * {@link InMemoryMailbox} round trip: send one message, receive it, acknowledge it (one
 * operation = all three), on one mailbox shared by 1 or 4 threads.
 *
 * <p>Run: {@code java -jar tether-bench/target/benchmarks.jar MailboxBenchmark}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class MailboxBenchmark {
  private static final Duration VISIBILITY = Duration.ofMinutes(1);
  private static final Duration TOOK = Duration.ofMillis(3);

  private InMemoryMailbox<String, String> mailbox;
  private MainLoop.Listener metered;

  @Setup(Level.Trial)
  public void setUp() {
    mailbox = InMemoryMailbox.<String, String>builder("bench").build();
    TetherMetrics metrics = TetherMetrics.builder().build();
    metrics.bindTo(new SimpleMeterRegistry());
    metered = metrics.loopListener("bench");
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    if (mailbox.approximateCount() != 0) {
      throw new IllegalStateException(mailbox.approximateCount() + " messages left unacknowledged");
    }
    mailbox.close();
  }

  private int roundTrip() {
    mailbox.send("work");
    List<Message<String, String>> got = mailbox.receive(1, VISIBILITY, Duration.ZERO);
    for (Message<String, String> m : got) {
      m.acknowledge();
    }
    return got.size();
  }

  @Benchmark
  @Threads(1)
  public int sendReceiveAcknowledgeOneThread() {
    return roundTrip();
  }

  /**
   * The same round trip plus the events a {@code MainLoop} gives {@code TetherMetrics} for one
   * message (received, completed with its duration, finished): the metrics' cost per message.
   */
  @Benchmark
  @Threads(1)
  public int sendReceiveAcknowledgeWithMetricsOneThread() {
    mailbox.send("work");
    List<Message<String, String>> got = mailbox.receive(1, VISIBILITY, Duration.ZERO);
    for (Message<String, String> m : got) {
      metered.received(m);
      m.acknowledge();
      metered.completed(m, TOOK);
      metered.finished(m);
    }
    return got.size();
  }

  @Benchmark
  @Threads(4)
  public int sendReceiveAcknowledgeFourThreads() {
    return roundTrip();
  }
}
