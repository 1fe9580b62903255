package dev.tether.health;

import dev.tether.Heartbeat;
import java.time.Duration;

/**
 * Child JVM for {@link WatchdogProcessTest}: a loop whose heartbeat never beats, a watchdog with a
 * 500 ms threshold and a 60 s interval, and a shutdown hook that must NOT run (the watchdog halts).
 */
public final class WatchdogChildMain {
  static final String HOOK_MARKER = "SHUTDOWN-HOOK-RAN";
  static final String SURVIVED_MARKER = "should have been killed";
  static final String LOOP_NAME = "stuck-child-loop";

  private WatchdogChildMain() {}

  public static void main(String[] args) throws InterruptedException {
    Runtime.getRuntime()
        .addShutdownHook(new Thread(() -> System.err.println(HOOK_MARKER), "test-hook"));
    Heartbeat never = new Heartbeat();
    Watchdog.builder()
        .heartbeat(LOOP_NAME, never)
        .stallThreshold(Duration.ofMillis(500))
        .checkInterval(Duration.ofSeconds(60))
        .build()
        .start();
    sleepingInsideTheStuckLoop();
    System.err.println("ERROR: " + SURVIVED_MARKER);
  }

  static void sleepingInsideTheStuckLoop() throws InterruptedException {
    Thread.sleep(10_000);
  }
}
