package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Many writers on one SQLite file through two independent stores (two pools, as two processes
 * would have): no "database is locked" reaches the caller.
 */
class SqliteContentionTest {

  @Test
  void manyThreadsOnTwoStoresOfOneFileNeverSeeDatabaseLocked() throws Exception {
    try (TestDatabase db = TestDatabase.sqlite();
        TetherStore one = db.open(TetherStoreConfig.builder().maximumPoolSize(4).build());
        TetherStore two = db.open(TetherStoreConfig.builder().maximumPoolSize(4).build())) {
      ExecutorService pool = Executors.newFixedThreadPool(12);
      List<Future<Integer>> results = new ArrayList<>();
      for (int t = 0; t < 12; t++) {
        LeaseManager w = new LeaseManager(t % 2 == 0 ? one : two, "w" + t);
        results.add(pool.submit(() -> {
          int done = 0;
          for (int i = 0; i < 100; i++) {
            w.enqueue(NewWorkItem.of("hammer", "x"));
            for (Lease l : w.acquire(AcquireRequest.batch("hammer", Duration.ofMinutes(1), 2))) {
              w.complete(l.itemId(), l.token(), null);
              done++;
            }
          }
          return done;
        }));
      }
      int done = 0;
      for (Future<Integer> f : results) {
        done += f.get(2, TimeUnit.MINUTES); // an SQLITE_BUSY would surface here as an exception
      }
      pool.shutdown();
      LeaseManager rest = new LeaseManager(one, "rest");
      List<Lease> left;
      while (!(left = rest.acquire(AcquireRequest.batch("hammer", Duration.ofMinutes(1), 100))).isEmpty()) {
        for (Lease l : left) {
          rest.complete(l.itemId(), l.token(), null);
          done++;
        }
      }
      assertThat(done).isEqualTo(1200);
      assertThat(new QueueMonitor(one).countsByStatus()).containsExactly(new QueueCount("hammer", WorkStatus.COMPLETED, 1200));
    }
  }
}
