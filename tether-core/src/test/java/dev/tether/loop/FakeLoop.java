package dev.tether.loop;

import dev.tether.Heartbeat;
import dev.tether.Ticker;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** A scriptable {@link WorkLoop} for group tests: beats, waits for shutdown, stops slowly, fails. */
final class FakeLoop implements WorkLoop {
  private final String name;
  private final Heartbeat heartbeat;
  private Optional<MainLoopConfig> config = Optional.empty();
  private Duration beatEvery; // null: never beats while running
  private Duration stopDelay = Duration.ZERO;
  private boolean ignoresShutdown;
  private RuntimeException runFailure;
  private RuntimeException shutdownFailure;

  final CountDownLatch started = new CountDownLatch(1);
  final CountDownLatch signalled = new CountDownLatch(1);
  final CountDownLatch ended = new CountDownLatch(1);
  final AtomicInteger shutdownCalls = new AtomicInteger();
  volatile boolean interrupted;
  /** Set once the work held at an interrupt is handed back ({@link #handsBackIn}). */
  volatile boolean handedBack;
  private Duration handBackTime = Duration.ZERO;
  /** When shutdown was first asked, the run interrupted, the run ended (nanoTime; 0: not yet). */
  volatile long signalledAt;
  volatile long interruptedAt;
  volatile long endedAt;
  volatile Thread runner;
  private volatile boolean running;
  volatile boolean ready = true;

  FakeLoop(String name) {
    this(name, Ticker.system());
  }

  FakeLoop(String name, Ticker ticker) {
    this.name = name;
    this.heartbeat = new Heartbeat(ticker);
  }

  FakeLoop config(MainLoopConfig c) {
    this.config = Optional.of(c);
    return this;
  }

  FakeLoop beatEvery(Duration d) {
    this.beatEvery = d;
    return this;
  }

  FakeLoop stopDelay(Duration d) {
    this.stopDelay = d;
    return this;
  }

  /** After an interrupt, takes this long to hand its work back, then sets {@link #handedBack}. */
  FakeLoop handsBackIn(Duration d) {
    this.handBackTime = d;
    return this;
  }

  FakeLoop ignoresShutdown() {
    this.ignoresShutdown = true;
    return this;
  }

  FakeLoop failsWith(RuntimeException e) {
    this.runFailure = e;
    return this;
  }

  FakeLoop shutdownFailsWith(RuntimeException e) {
    this.shutdownFailure = e;
    return this;
  }

  @Override
  public boolean isReady() {
    return ready;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public void run() {
    runner = Thread.currentThread();
    running = true;
    started.countDown();
    try {
      heartbeat.beat();
      if (runFailure != null) {
        throw runFailure;
      }
      while (true) {
        long waitMs = beatEvery == null ? 60_000 : Math.max(1, beatEvery.toMillis());
        if (signalled.await(waitMs, TimeUnit.MILLISECONDS)) {
          if (!ignoresShutdown) {
            break;
          }
          Thread.sleep(60_000); // stuck: only an interrupt gets it out
        }
        if (beatEvery != null) {
          heartbeat.beat();
        }
      }
      if (!stopDelay.isZero()) {
        Thread.sleep(stopDelay.toMillis()); // handing back in-flight work
      }
    } catch (InterruptedException e) {
      interruptedAt = System.nanoTime();
      interrupted = true;
      if (!handBackTime.isZero()) {
        try {
          Thread.sleep(handBackTime.toMillis()); // a store round trip, say
        } catch (InterruptedException again) {
          // handed back anyway
        }
        handedBack = true;
      }
      Thread.currentThread().interrupt();
    } finally {
      running = false;
      endedAt = System.nanoTime();
      ended.countDown();
    }
  }

  @Override
  public void shutdown() {
    if (shutdownCalls.incrementAndGet() == 1) {
      signalledAt = System.nanoTime();
    }
    if (shutdownFailure != null) {
      throw shutdownFailure;
    }
    signalled.countDown();
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  @Override
  public Heartbeat heartbeat() {
    return heartbeat;
  }

  @Override
  public Optional<MainLoopConfig> config() {
    return config;
  }

  @Override
  public String toString() {
    return "FakeLoop[" + name + "]";
  }
}
