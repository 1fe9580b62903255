package dev.tether.jdbc;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A worker process for the chaos tests, run as a real child JVM and killed at random.
 *
 * <ul>
 *   <li>{@code drain <url> <queue> <workerId> <sideFile> <leaseMillis> <minWorkMs> <maxWorkMs>}:
 *       acquires one item at a time, appends {@code START <id> <delivery> <worker>} to its side
 *       file, works (sleeps) for a random time, completes it and appends {@code DONE ...} (or
 *       {@code REFUSED ...} if the completion was refused), until the queue has nothing
 *       unfinished. Database outages are logged and retried with backoff; a completion whose
 *       commit is unknown is retried and an {@link ItemFinalizedException} for its own token
 *       counts as done.
 *   <li>{@code freeze <url> <queue> <workerId> <leaseMillis> <workMs>}: acquires one item, prints
 *       {@code ACQUIRED <id> <token>}, works for {@code workMs} (the test freezes it meanwhile),
 *       then tries to complete and prints {@code COMPLETED} or {@code REFUSED <exception>}.
 * </ul>
 */
public final class ChaosWorkerMain {
  private ChaosWorkerMain() {}

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    try (TetherStore store = TetherStore.open(args[1], TetherStoreConfig.builder().maximumPoolSize(2)
        .connectionTimeout(Duration.ofSeconds(2)).build())) {
      LeaseManager lm = new LeaseManager(store, args[3]);
      if (mode.equals("drain")) {
        drain(store, lm, args[2], args[4], Long.parseLong(args[5]), Integer.parseInt(args[6]),
            Integer.parseInt(args[7]));
      } else if (mode.equals("freeze")) {
        freeze(lm, args[2], Long.parseLong(args[4]), Long.parseLong(args[5]));
      } else {
        throw new IllegalArgumentException("unknown mode " + mode);
      }
    }
  }

  private static void freeze(LeaseManager lm, String queue, long leaseMs, long workMs) throws Exception {
    Optional<Lease> got;
    while ((got = lm.acquire(queue, Duration.ofMillis(leaseMs))).isEmpty()) {
      Thread.sleep(20);
    }
    Lease l = got.get();
    System.out.println("ACQUIRED " + l.itemId() + " " + l.token());
    System.out.flush();
    Thread.sleep(workMs);
    try {
      lm.complete(l.itemId(), l.token(), "late".getBytes(StandardCharsets.UTF_8));
      System.out.println("COMPLETED");
    } catch (LeaseLostException | ItemFinalizedException e) {
      System.out.println("REFUSED " + e.getClass().getSimpleName() + ": " + e.getMessage());
    }
    System.out.flush();
  }

  private static void drain(TetherStore store, LeaseManager lm, String queue, String sideFile, long leaseMs,
      int minWork, int maxWork) throws Exception {
    Inserts inserts = store.sql().inserts();
    try (OutputStream side = new FileOutputStream(sideFile, true)) {
      long backoff = 50;
      while (true) {
        List<Lease> leases;
        try {
          leases = lm.acquire(AcquireRequest.one(queue, Duration.ofMillis(leaseMs)));
          if (leases.isEmpty()) {
            long unfinished = store.read("count", c -> inserts.countUnfinished(c, queue));
            if (unfinished == 0) {
              System.out.println("DRAINED");
              return;
            }
            Thread.sleep(20);
            continue;
          }
          backoff = 50;
        } catch (TetherStoreException e) {
          outage(e);
          Thread.sleep(backoff);
          backoff = Math.min(2000, backoff * 2);
          continue;
        }
        Lease l = leases.get(0);
        line(side, "START " + l.itemId() + " " + l.deliveryCount() + " " + lm.workerId());
        Thread.sleep(ThreadLocalRandom.current().nextInt(minWork, maxWork + 1));
        String outcome = complete(lm, l);
        line(side, outcome + " " + l.itemId() + " " + l.deliveryCount() + " " + lm.workerId());
      }
    }
  }

  /** Completes, retrying through outages; returns DONE or REFUSED. */
  private static String complete(LeaseManager lm, Lease l) throws InterruptedException {
    long backoff = 50;
    boolean retried = false;
    while (true) {
      try {
        lm.complete(l.itemId(), l.token(), null);
        return "DONE";
      } catch (ItemFinalizedException e) {
        // Our own token finalized it: only possible if an earlier attempt committed unseen.
        return retried ? "DONE" : "REFUSED";
      } catch (LeaseLostException e) {
        return "REFUSED";
      } catch (TetherStoreException e) {
        outage(e);
        retried = true;
        Thread.sleep(backoff);
        backoff = Math.min(2000, backoff * 2);
      }
    }
  }

  /** Reports an outage: its class says whether the store classified it as transient. */
  private static void outage(TetherStoreException e) {
    System.out.println("OUTAGE " + e.getClass().getSimpleName() + " " + e.getMessage());
    System.out.flush();
  }

  private static void line(OutputStream side, String text) throws IOException {
    // One write() per line: survives kill -9 (the kernel has it), and never interleaves.
    side.write((text + "\n").getBytes(StandardCharsets.UTF_8));
    side.flush();
  }
}
