package dev.tether.loop;

import java.time.Duration;

/**
 * Child JVM for {@link LoopGroupSignalTest}: runs a group with one loop and the default signal
 * handling, prints {@value #STARTED} once the loop runs, and waits to be sent SIGTERM. With the
 * argument {@code stuck} the loop ignores shutdown requests; with {@code exit} the program calls
 * {@code System.exit} as soon as {@code run()} returns.
 */
public final class LoopGroupSignalChildMain {
  static final String STARTED = "LOOP-STARTED";
  static final String AFTER_RUN = "AFTER-RUN-DONE";

  private LoopGroupSignalChildMain() {}

  public static void main(String[] args) throws Exception {
    boolean stuck = args.length > 0 && args[0].equals("stuck");
    FakeLoop loop = new FakeLoop("worker").stopDelay(Duration.ofMillis(200));
    if (stuck) {
      loop.ignoresShutdown();
    }
    LoopGroup group =
        LoopGroup.builder().loop(loop).noWatchdog().shutdownTimeout(Duration.ofSeconds(1)).build();
    Thread announcer =
        new Thread(
            () -> {
              try {
                loop.started.await();
                System.out.println(STARTED);
                System.out.flush();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
    announcer.setDaemon(true);
    announcer.start();
    group.run();
    if (args.length > 0 && args[0].equals("exit")) {
      System.exit(0); // waits for the shutdown hook, which must not wait for this thread
    }
    // what follows run() (closing a store, say) must get to finish before the JVM halts
    Thread.sleep(300);
    System.err.println(AFTER_RUN);
  }
}
