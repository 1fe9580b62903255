package dev.tether.bench;

import dev.tether.Heartbeat;
import dev.tether.LeaseExtender;
import dev.tether.LeaseExtenderConfig;
import dev.tether.micrometer.TetherMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import dev.tether.mailbox.InMemoryMailbox;
import dev.tether.mailbox.Message;
import dev.tether.test.SettableTicker;
import java.time.Duration;
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
import org.openjdk.jmh.annotations.Warmup;

/**
 * The cost of a beat when an extension is due: the heartbeat's ticker is moved one interval
 * forward before every beat, so every beat extends the lease of a message received from an
 * {@link InMemoryMailbox} (a real {@code extendVisibility}, lock and all). Single-threaded.
 *
 * <p>Run: {@code java -jar tether-bench/target/benchmarks.jar ExtensionBenchmark}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class ExtensionBenchmark {
  private static final Duration INTERVAL = Duration.ofSeconds(1);

  /** A heartbeat on a settable ticker with an extender attached to an in-memory message. */
  public abstract static class Base {
    InMemoryMailbox<String, String> mailbox;
    SettableTicker ticker;
    Heartbeat heartbeat;
    LeaseExtender.Attachment attachment;

    void init(LeaseExtender.Listener listener) {
      mailbox = InMemoryMailbox.<String, String>builder("bench").build();
      mailbox.send("work");
      Message<String, String> message = mailbox.receive(1, Duration.ofMinutes(10), Duration.ZERO).get(0);
      ticker = new SettableTicker();
      heartbeat = new Heartbeat(ticker);
      attachment = new LeaseExtender(LeaseExtenderConfig.of(INTERVAL, Duration.ofMinutes(5)), listener)
          .attach(message, heartbeat);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
      if (attachment.isLeaseLost()) {
        throw new IllegalStateException("the lease was lost during the benchmark");
      }
      attachment.close();
      mailbox.close();
    }
  }

  /** The extender without a listener. */
  @State(Scope.Thread)
  public static class Attached extends Base {
    @Setup(Level.Trial)
    public void setUp() {
      init(LeaseExtender.Listener.NONE);
    }
  }

  /** The extender reporting each extension to {@code TetherMetrics} (bound to a registry). */
  @State(Scope.Thread)
  public static class AttachedWithMetrics extends Base {
    @Setup(Level.Trial)
    public void setUpWithMetrics() {
      TetherMetrics metrics = TetherMetrics.builder().build();
      metrics.bindTo(new SimpleMeterRegistry());
      init(metrics.extenderListener("bench"));
    }
  }

  /** Every beat extends the lease and counts it in {@code tether.lease.extensions}. */
  @Benchmark
  public long beatWithExtensionDueAndMetrics(AttachedWithMetrics a) {
    a.ticker.advance(INTERVAL);
    a.heartbeat.beat();
    return a.attachment.extensions();
  }

  /** Every beat extends the lease: the ticker moves one interval before each beat. */
  @Benchmark
  public long beatWithExtensionDue(Attached a) {
    a.ticker.advance(INTERVAL);
    a.heartbeat.beat();
    return a.attachment.extensions();
  }

  /** The same ticker move and beat with nothing due (ticker not moved): the baseline. */
  @Benchmark
  public long beatWithNothingDueSameSetup(Attached a) {
    a.heartbeat.beat();
    return a.attachment.extensions();
  }
}
