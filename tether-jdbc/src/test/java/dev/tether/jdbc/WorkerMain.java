package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;

/**
 * A worker run as a real child JVM by the crash and cluster tests.
 *
 * <ul>
 *   <li>{@code hold <url> <queue> <workerId> <leaseMillis>}: waits until it acquires one item,
 *       prints {@code ACQUIRED <id> <token> <deliveryCount>}, then sleeps until killed;
 *   <li>{@code drain <url> <queue> <workerId> <batch>}: acquires and completes items until the
 *       queue has none left unfinished, recording each completion in {@code completions}.
 * </ul>
 */
public final class WorkerMain {
  private WorkerMain() {}

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    try (TetherStore store = TetherStore.open(args[1], TetherStoreConfig.builder().maximumPoolSize(2).build())) {
      LeaseManager lm = new LeaseManager(store, args[3]);
      if (mode.equals("hold")) {
        Duration lease = Duration.ofMillis(Long.parseLong(args[4]));
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        java.util.Optional<Lease> got;
        while ((got = lm.acquire(args[2], lease)).isEmpty()) {
          if (System.nanoTime() > deadline) {
            throw new IllegalStateException("nothing to acquire on " + args[2] + " within 30 s");
          }
          Thread.sleep(50);
        }
        Lease l = got.get();
        System.out.println("ACQUIRED " + l.itemId() + " " + l.token() + " " + l.deliveryCount());
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
      } else if (mode.equals("drain")) {
        int done = drain(store, lm, args[2], Integer.parseInt(args[4]));
        System.out.println("DRAINED " + done);
      } else {
        throw new IllegalArgumentException("unknown mode " + mode);
      }
    }
  }

  /** Completes items of {@code queue} until none is left unfinished; returns how many. */
  static int drain(TetherStore store, LeaseManager lm, String queue, int batch) throws Exception {
    int done = 0;
    int idle = 0;
    while (true) {
      List<Lease> leases = lm.acquire(AcquireRequest.batch(queue, Duration.ofMinutes(2), batch));
      if (leases.isEmpty()) {
        long unfinished = store.read("count", c -> store.sql().inserts().countUnfinished(c, queue));
        if (unfinished == 0 || ++idle > 2000) {
          return done;
        }
        Thread.sleep(5);
        continue;
      }
      idle = 0;
      for (Lease l : leases) {
        lm.complete(l.itemId(), l.token(), null);
        recordCompletion(store, l.itemId(), lm.workerId());
        done++;
      }
    }
  }

  static void recordCompletion(TetherStore store, long itemId, String worker) {
    store.write("recording a completion", c -> {
      insert(c, itemId, worker);
      return null;
    });
  }

  private static void insert(Connection c, long itemId, String worker) throws java.sql.SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO completions (item_id, worker) VALUES (?, ?)")) {
      ps.setLong(1, itemId);
      ps.setString(2, worker);
      ps.executeUpdate();
    }
  }
}
