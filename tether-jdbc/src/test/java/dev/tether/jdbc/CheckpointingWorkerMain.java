package dev.tether.jdbc;

import dev.tether.Codec;
import dev.tether.LeaseExtenderConfig;
import dev.tether.loop.MainLoop;
import dev.tether.loop.MainLoopConfig;
import dev.tether.loop.WorkContext;
import java.time.Duration;

/**
 * A worker run as a real child JVM by the progress-takeover test: a {@link MainLoop} on a {@link
 * JdbcMailbox} whose handler runs steps {@code last checkpoint + 1 .. steps}, checkpointing after
 * each, and prints {@code STEP <delivery> <step>} once a step's checkpoint is durable.
 *
 * <p>{@code <url> <queue> <holder> <steps> <stallAfter> <visibilityMillis>}: after checkpointing
 * step {@code stallAfter} (0: never) the handler stops beating and waits until killed.
 */
public final class CheckpointingWorkerMain {
  private CheckpointingWorkerMain() {}

  public static void main(String[] args) throws Exception {
    String url = args[0];
    String queue = args[1];
    String holder = args[2];
    int steps = Integer.parseInt(args[3]);
    int stallAfter = Integer.parseInt(args[4]);
    Duration visibility = Duration.ofMillis(Long.parseLong(args[5]));
    try (TetherStore store = TetherStore.open(url, TetherStoreConfig.builder().maximumPoolSize(3).build())) {
      JdbcMailbox<String, String> mailbox =
          JdbcMailbox.builder(store, queue, Codec.utf8(), Codec.utf8()).holder(holder).build();
      MainLoop<String, String> loop = MainLoop.builder(holder, mailbox, (String body, WorkContext context) -> {
        int from = context.lastCheckpointAsString().map(Integer::parseInt).orElse(0) + 1;
        for (int step = from; step <= steps; step++) {
          Thread.sleep(50); // the step's work
          context.checkpoint(Integer.toString(step));
          System.out.println("STEP " + context.deliveryCount() + " " + step);
          System.out.flush();
          if (step == stallAfter) {
            Thread.sleep(Long.MAX_VALUE); // killed here
          }
        }
        return "done from step " + from;
      }).config(MainLoopConfig.builder().visibilityTimeout(visibility).waitTime(Duration.ofMillis(200))
          .leaseExtender(LeaseExtenderConfig.of(visibility.dividedBy(6), visibility.dividedBy(2))).build())
          .build();
      loop.run(); // until killed
    }
  }
}
