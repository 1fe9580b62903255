package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.mailbox.Message;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * Cancellation notifications travel on one channel per database with the item id alone, so two
 * Tether schemas in one database (two applications, or parallel tests) hear each other's. A
 * cancellation must stop only its own schema's item: the item of the same id in the other schema
 * keeps running.
 */
class PostgresCancelNotificationTest {
  @Test
  void aCancellationInAnotherSchemaDoesNotStopTheItemOfTheSameIdHere() {
    try (PostgresTestSchema a = new PostgresTestSchema("tether_cnA_");
        PostgresTestSchema b = new PostgresTestSchema("tether_cnB_");
        TetherStore storeA = TetherStore.open(a.url());
        TetherStore storeB = TetherStore.open(b.url())) {
      LeaseManager workerA = new LeaseManager(storeA, "a");
      LeaseManager workerB = new LeaseManager(storeB, "b");
      long idA = workerA.enqueue(NewWorkItem.of("q", "a's job"));
      long idB = workerB.enqueue(NewWorkItem.of("q", "b's job"));
      assertThat(idA).as("the same id in both schemas").isEqualTo(idB);
      workerA.acquire("q", Duration.ofMinutes(5)).orElseThrow();
      workerB.acquire("q", Duration.ofMinutes(5)).orElseThrow();
      AtomicBoolean aStopped = new AtomicBoolean();
      AtomicBoolean bStopped = new AtomicBoolean();
      try (Message.Subscription watchA = storeA.cancelWatch().watch(idA, () -> aStopped.set(true));
          Message.Subscription watchB = storeB.cancelWatch().watch(idB, () -> bStopped.set(true))) {
        assertThat(new QueueAdmin(storeB).cancel(idB, "not needed")).isTrue();

        await().atMost(Duration.ofSeconds(20)).untilTrue(bStopped);
        // A's listener heard the same notification; A's item was not cancelled and stays watched
        await().during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(5)).untilFalse(aStopped);
        assertThat(new QueueMonitor(storeA).item(idA).orElseThrow().status())
            .isEqualTo(WorkStatus.IN_PROGRESS);

        // and A's own cancellation still reaches A
        assertThat(new QueueAdmin(storeA).cancel(idA, "not needed either")).isTrue();
        await().atMost(Duration.ofSeconds(20)).untilTrue(aStopped);
      }
    }
  }
}
