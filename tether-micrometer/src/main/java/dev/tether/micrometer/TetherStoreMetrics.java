package dev.tether.micrometer;

import dev.tether.Ticker;
import dev.tether.jdbc.QueueCount;
import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkStatus;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Store-wide gauges read from a {@link TetherStore}: {@value #QUEUE_ITEMS}{@code {queue, status}}
 * (items by queue and status), {@value #STORE_QUEUES} (how many queues) and {@value #STORE_CHECKPOINTS}{@code {kind}} (audit checkpoints kept
 * in the store, by kind; they drop when retention or a purge deletes some, so they are gauges, not
 * counters).
 *
 * <p>These figures are the same whichever process reads them, so bind this in <em>one</em> place
 * (a dashboard process, or one designated worker), not in every worker: a fleet of workers each
 * exporting them would multiply the series and the store reads. {@link TetherMetrics} holds the
 * per-process meters that every worker should export.
 *
 * <p>The store is read at most once per refresh interval (default {@link #DEFAULT_REFRESH}), when a
 * gauge is read (a scrape) after the interval, on a short-lived daemon thread of its own ({@code
 * tether-store-metrics}); gauges read in between see the cached figures. A scrape waits at most
 * {@link #SCRAPE_WAIT} for a read: a store that is slow or unreachable (a connection timeout is
 * often 10 to 30 s) does not hold the scrape past a typical scrape timeout; it gets the figures
 * read before, or NaN once they are older than two refresh intervals. When the store cannot be
 * read the gauges report NaN until it can. The {@code queue} tag takes
 * the configured queue names only (others summed as {@value TetherMetrics#OTHER}), or else the
 * first {@link #DEFAULT_MAX_QUEUES} queue names seen. Thread-safe.
 */
public final class TetherStoreMetrics implements MeterBinder {
  private static final Logger log = LoggerFactory.getLogger(TetherStoreMetrics.class);

  /** Items by queue and status (gauge). */
  public static final String QUEUE_ITEMS = "tether.queue.items";
  /** Audit checkpoints kept in the store, by kind (gauge). */
  public static final String STORE_CHECKPOINTS = "tether.store.checkpoints";
  /** Queues in the store (gauge). */
  public static final String STORE_QUEUES = "tether.store.queues";
  /** Default time between two reads of the store. */
  public static final Duration DEFAULT_REFRESH = Duration.ofSeconds(15);
  /** The longest a scrape waits for a read of the store. */
  public static final Duration SCRAPE_WAIT = Duration.ofSeconds(2);
  /** Default cap on distinct queue tag values when no queue names are configured. */
  public static final int DEFAULT_MAX_QUEUES = 50;

  private final CompositeMeterRegistry registry = new CompositeMeterRegistry();
  private final Supplier<List<QueueCount>> depthReader;
  private final Supplier<Map<String, Long>> checkpointReader;
  private final long refreshNanos;
  private final long scrapeWaitNanos;
  private final Ticker ticker;
  private final TagValues queues;
  private final TagValues kinds = TagValues.firstSeen(32);
  private final Set<String> registeredQueues = ConcurrentHashMap.newKeySet();
  private final Set<String> registeredKinds = ConcurrentHashMap.newKeySet();
  private final Object refreshLock = new Object();

  private volatile Snapshot snapshot; // null until first read
  private volatile boolean triggerRegistered;
  private volatile long readAt;
  private boolean failing; // guarded by refreshLock
  private java.util.concurrent.CompletableFuture<Snapshot> refreshing; // guarded by refreshLock
  private long refreshStartedNanos; // System.nanoTime(); guarded by refreshLock

  /**
   * Exports the store's figures, read at most every {@link #DEFAULT_REFRESH}, for any queue.
   *
   * @param store the store
   */
  public TetherStoreMetrics(TetherStore store) {
    this(store, DEFAULT_REFRESH, Set.of(), Ticker.system());
  }

  /**
   * Exports the store's figures.
   *
   * @param store the store
   * @param refresh the least time between two reads of the store; at least 1 s
   * @param queueNames the queue names to tag; empty: the first {@link #DEFAULT_MAX_QUEUES} seen
   * @param ticker the monotonic ticker that times the refresh
   * @throws IllegalArgumentException if {@code refresh} is under 1 s
   */
  public TetherStoreMetrics(TetherStore store, Duration refresh, Set<String> queueNames,
      Ticker ticker) {
    this(new QueueMonitor(Objects.requireNonNull(store, "store")), refresh, queueNames, ticker);
  }

  private TetherStoreMetrics(QueueMonitor monitor, Duration refresh, Set<String> queueNames,
      Ticker ticker) {
    this(monitor::countsByStatus, monitor::countsByCheckpointKind, refresh, queueNames, ticker);
  }

  TetherStoreMetrics(Supplier<List<QueueCount>> depthReader,
      Supplier<Map<String, Long>> checkpointReader, Duration refresh, Set<String> queueNames,
      Ticker ticker) {
    this(depthReader, checkpointReader, refresh, queueNames, ticker, SCRAPE_WAIT);
  }

  TetherStoreMetrics(Supplier<List<QueueCount>> depthReader,
      Supplier<Map<String, Long>> checkpointReader, Duration refresh, Set<String> queueNames,
      Ticker ticker, Duration scrapeWait) {
    Objects.requireNonNull(refresh, "refresh");
    if (refresh.compareTo(Duration.ofSeconds(1)) < 0) {
      throw new IllegalArgumentException("refresh must be at least 1 s (each refresh reads the"
          + " store), was " + refresh);
    }
    this.depthReader = depthReader;
    this.checkpointReader = checkpointReader;
    this.refreshNanos = refresh.toNanos();
    this.scrapeWaitNanos = scrapeWait.toNanos();
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.queues = queueNames.isEmpty() ? TagValues.firstSeen(DEFAULT_MAX_QUEUES)
        : TagValues.fixed(queueNames);
    queueNames.forEach(this::registerQueue);
  }

  /**
   * Registers the gauges with {@code registry}. The store is first read when a gauge is first
   * read; the gauges of a queue (or checkpoint kind) are registered when a read first finds it,
   * so they appear from the next scrape on; {@value #STORE_QUEUES} is there from the start and its
   * reading is what refreshes the figures when no queue is known yet.
   *
   * @param registry the registry
   */
  @Override
  public void bindTo(MeterRegistry registry) {
    this.registry.add(Objects.requireNonNull(registry, "registry"));
    if (!triggerRegistered) {
      triggerRegistered = true;
      Gauge.builder(STORE_QUEUES, this, m -> m.current().queues())
          .description("Queues in the store (read from the store, cached)")
          .strongReference(true) // a binder created and bound in one expression must live on
          .register(this.registry);
    }
  }

  /**
   * The figures: the cached ones while younger than the refresh interval, else those of a read
   * started now (or already running), waited for until {@link #scrapeWaitNanos} after its start;
   * past that, the older figures while younger than two intervals, else unknown.
   */
  private Snapshot current() {
    Snapshot s = snapshot;
    if (s != null && ticker.read() - readAt < refreshNanos) {
      return s;
    }
    java.util.concurrent.CompletableFuture<Snapshot> reading;
    long waitNanos;
    synchronized (refreshLock) {
      s = snapshot;
      if (s != null && ticker.read() - readAt < refreshNanos) {
        return s; // another thread refreshed meanwhile
      }
      if (refreshing == null) {
        refreshing = startRefresh();
        refreshStartedNanos = System.nanoTime();
      }
      reading = refreshing;
      waitNanos = refreshStartedNanos + scrapeWaitNanos - System.nanoTime();
    }
    try {
      return reading.get(Math.max(0, waitNanos), java.util.concurrent.TimeUnit.NANOSECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      // the read is slow: the figures before it while they are not too old
      s = snapshot;
      return s != null && ticker.read() - readAt < 2 * refreshNanos ? s : Snapshot.FAILED;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Snapshot.FAILED;
    } catch (java.util.concurrent.ExecutionException e) {
      return Snapshot.FAILED; // not reached: the read reports a failure as FAILED
    }
  }

  /** Reads the store on a thread of its own; the future completes with the new figures. */
  private java.util.concurrent.CompletableFuture<Snapshot> startRefresh() {
    java.util.concurrent.CompletableFuture<Snapshot> done = new java.util.concurrent.CompletableFuture<>();
    Thread t = new Thread(() -> {
      long started = ticker.read();
      Snapshot next = Snapshot.FAILED;
      try {
        next = readLogged();
      } finally {
        synchronized (refreshLock) {
          snapshot = next;
          readAt = started;
          refreshing = null;
        }
        try {
          next.depth.keySet().forEach(k -> registerQueue(k.substring(0, k.indexOf('\n'))));
          next.checkpoints.keySet().forEach(this::registerKind);
        } finally {
          done.complete(next);
        }
      }
    }, "tether-store-metrics");
    t.setDaemon(true);
    t.start();
    return done;
  }

  /** Reads the store; a failure is logged once (until a read works again) and gives FAILED. */
  private Snapshot readLogged() {
    try {
      Snapshot next = read();
      synchronized (refreshLock) {
        if (failing) {
          log.info("Store metrics: the store can be read again");
          failing = false;
        }
      }
      return next;
    } catch (RuntimeException e) {
      synchronized (refreshLock) {
        if (!failing) {
          log.warn("Store metrics: cannot read the store ({}); the gauges report NaN until it can,"
              + " retrying at most every {} s", e.toString(), refreshNanos / 1_000_000_000L);
          failing = true;
        }
      }
      return Snapshot.FAILED;
    }
  }

  private Snapshot read() {
    Map<String, Long> depth = new HashMap<>();
    Set<String> names = new java.util.HashSet<>();
    for (QueueCount c : depthReader.get()) {
      names.add(c.queue());
      depth.merge(key(queues.of(c.queue()), c.status()), c.count(), Long::sum);
    }
    Map<String, Long> cps = new HashMap<>();
    checkpointReader.get().forEach((kind, n) -> cps.merge(kinds.of(kind), n, Long::sum));
    return new Snapshot(depth, cps, names.size(), false);
  }

  private static String key(String queueTag, WorkStatus status) {
    return queueTag + "\n" + status.dbValue();
  }

  private void registerQueue(String tag) {
    if (!registeredQueues.add(tag)) {
      return;
    }
    for (WorkStatus status : WorkStatus.values()) {
      String key = key(tag, status);
      Gauge.builder(QUEUE_ITEMS, this, m -> m.current().depth(key))
          .description("Items in the store by queue and status (read from the store, cached)")
          .tag("queue", tag)
          .tag("status", status.dbValue())
          .strongReference(true)
          .register(registry);
    }
  }

  private void registerKind(String kind) {
    if (!registeredKinds.add(kind)) {
      return;
    }
    Gauge.builder(STORE_CHECKPOINTS, this, m -> m.current().checkpoints(kind))
        .description("Audit checkpoints kept in the store, by kind (drops after retention or a"
            + " purge)")
        .tag("kind", kind)
        .strongReference(true)
        .register(registry);
  }

  private static final class Snapshot {
    static final Snapshot FAILED = new Snapshot(Map.of(), Map.of(), 0, true);

    final Map<String, Long> depth;
    final Map<String, Long> checkpoints;
    final int queueCount;
    final boolean failed;

    Snapshot(Map<String, Long> depth, Map<String, Long> checkpoints, int queueCount,
        boolean failed) {
      this.depth = depth;
      this.checkpoints = checkpoints;
      this.queueCount = queueCount;
      this.failed = failed;
    }

    double queues() {
      return failed ? Double.NaN : queueCount;
    }

    double depth(String key) {
      return failed ? Double.NaN : depth.getOrDefault(key, 0L);
    }

    double checkpoints(String kind) {
      return failed ? Double.NaN : checkpoints.getOrDefault(kind, 0L);
    }
  }
}
