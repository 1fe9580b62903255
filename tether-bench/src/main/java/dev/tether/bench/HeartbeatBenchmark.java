package dev.tether.bench;

import dev.tether.CoarseTicker;
import dev.tether.Heartbeat;
import dev.tether.LeaseExtender;
import dev.tether.LeaseExtenderConfig;
import dev.tether.micrometer.TetherMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The cost of {@link Heartbeat#beat()} with a {@link LeaseExtender} attached and no extension due:
 * the hot path of every tool call. One heartbeat is shared by all benchmark threads.
 *
 * <p>Run: {@code java -jar tether-bench/target/benchmarks.jar HeartbeatBenchmark}. Average time per
 * operation, ten one-second iterations: the median of the iteration scores is the figure reported
 * (sample mode is useless here: its timer costs more than a beat). The plain variants use the
 * default {@code Ticker.system()}, which serves a tight loop like this one from a cached reading
 * (see its Javadoc); the {@code directClock*} variants read {@code System.nanoTime()} on every
 * beat (a ticker that is a plain method reference), the {@code coarse*} variants use a {@link
 * CoarseTicker}; {@code nanoTimeBaseline} is the cost of the clock read alone. The {@code
 * beatWithExtenderAndMetrics*} variants attach an extender whose listener is {@code
 * TetherMetrics}' (bound to a registry): the metrics' cost on a beat with nothing due.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 10, time = 1)
@Fork(1)
public class HeartbeatBenchmark {
  private Heartbeat heartbeat;
  private LeaseExtender.Attachment attachment;
  private Heartbeat bare;
  private CoarseTicker coarseTicker;
  private Heartbeat coarse;
  private LeaseExtender.Attachment coarseAttachment;
  private Heartbeat direct;
  private LeaseExtender.Attachment directAttachment;
  private Heartbeat metered;
  private LeaseExtender.Attachment meteredAttachment;

  @Setup(Level.Trial)
  public void setUp() {
    heartbeat = new Heartbeat();
    bare = new Heartbeat();
    // an interval far longer than the run: no extension ever becomes due
    LeaseExtender extender =
        new LeaseExtender(LeaseExtenderConfig.of(Duration.ofHours(1), Duration.ofHours(2)));
    attachment = extender.attach(new NoOpMessage(), heartbeat);
    coarseTicker = CoarseTicker.start();
    coarse = new Heartbeat(coarseTicker);
    coarseAttachment =
        new LeaseExtender(LeaseExtenderConfig.of(Duration.ofHours(1), Duration.ofHours(2)))
            .attach(new NoOpMessage(), coarse);
    // the same, its extender reporting to TetherMetrics bound to a registry (as in a worker)
    TetherMetrics metrics = TetherMetrics.builder().build();
    metrics.bindTo(new SimpleMeterRegistry());
    metered = new Heartbeat();
    meteredAttachment =
        new LeaseExtender(LeaseExtenderConfig.of(Duration.ofHours(1), Duration.ofHours(2)),
                metrics.extenderListener("bench"))
            .attach(new NoOpMessage(), metered);
    direct = new Heartbeat(System::nanoTime);
    directAttachment =
        new LeaseExtender(LeaseExtenderConfig.of(Duration.ofHours(1), Duration.ofHours(2)))
            .attach(new NoOpMessage(), direct);
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    if (attachment.extensions() != 0) {
      throw new IllegalStateException("an extension ran during the benchmark");
    }
    attachment.close();
    coarseAttachment.close();
    directAttachment.close();
    meteredAttachment.close();
    coarseTicker.close();
  }

  @Benchmark
  @Threads(1)
  public void beatWithExtenderOneThread() {
    heartbeat.beat();
  }

  @Benchmark
  @Threads(1)
  public void beatWithExtenderAndMetricsOneThread() {
    metered.beat();
  }

  @Benchmark
  @Threads(4)
  public void beatWithExtenderAndMetricsFourThreads() {
    metered.beat();
  }

  @Benchmark
  @Threads(4)
  public void beatWithExtenderFourThreads() {
    heartbeat.beat();
  }

  @Benchmark
  @Threads(1)
  public void coarseBeatWithExtenderOneThread() {
    coarse.beat();
  }

  @Benchmark
  @Threads(4)
  public void coarseBeatWithExtenderFourThreads() {
    coarse.beat();
  }

  @Benchmark
  @Threads(1)
  public void directClockBeatWithExtenderOneThread() {
    direct.beat();
  }

  @Benchmark
  @Threads(4)
  public void directClockBeatWithExtenderFourThreads() {
    direct.beat();
  }

  @Benchmark
  @Threads(1)
  public void beatNoCallbacks() {
    bare.beat();
  }

  @Benchmark
  @Threads(1)
  public long nanoTimeBaseline() {
    return System.nanoTime();
  }
}
