package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The dashboard's bounded queries on every engine (subclass per engine). */
abstract class OverviewQueriesCompatibilityTest extends StoreTestBase {
  private static final Duration LEASE = Duration.ofMinutes(5);

  private List<Long> enqueue(String queue, int n, String prefix) {
    List<NewWorkItem> items = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      items.add(NewWorkItem.of(queue, prefix + i));
    }
    return new LeaseManager(store, "w").enqueueAll(items);
  }

  private List<Long> allPages(ItemPageRequest first) {
    OverviewQueries o = new OverviewQueries(store);
    List<Long> ids = new ArrayList<>();
    ItemPageRequest r = first;
    for (int guard = 0; guard < 100; guard++) {
      ItemPage p = o.page(r);
      p.items().forEach(w -> ids.add(w.id()));
      assertThat(p.items().size()).isLessThanOrEqualTo(r.limit());
      if (p.nextBeforeId() == null) {
        return ids;
      }
      r = new ItemPageRequest(r.queue(), r.status(), r.text(), p.nextBeforeId(), r.limit());
    }
    throw new AssertionError("paging did not end");
  }

  @Test
  void keysetPagesGiveEveryItemOnceNewestFirst() {
    List<Long> a = enqueue("a", 13, "a");
    List<Long> b = enqueue("b", 12, "b");
    List<Long> all = new ArrayList<>(a);
    all.addAll(b);
    all.sort((x, y) -> Long.compare(y, x));
    ItemPage first = new OverviewQueries(store).page(ItemPageRequest.newest(10));
    assertThat(first.items()).extracting(WorkItem::id).containsExactlyElementsOf(all.subList(0, 10));
    assertThat(first.nextBeforeId()).isEqualTo(all.get(9));
    assertThat(allPages(ItemPageRequest.newest(10))).containsExactlyElementsOf(all);
    // exactly a page left: the last page says there is no next one
    assertThat(allPages(ItemPageRequest.newest(5))).containsExactlyElementsOf(all);
  }

  @Test
  void filtersByQueueStatusAndBoth() {
    LeaseManager w = new LeaseManager(store, "w");
    List<Long> a = enqueue("a", 6, "a");
    enqueue("b", 4, "b");
    // two of queue a complete, one fails
    for (int i = 0; i < 3; i++) {
      Lease l = w.acquire("a", LEASE).orElseThrow();
      if (i < 2) {
        w.complete(l.itemId(), l.token(), null);
      } else {
        w.release(l.itemId(), l.token(), false, null, "boom");
      }
    }
    List<Long> aDesc = new ArrayList<>(a);
    aDesc.sort((x, y) -> Long.compare(y, x));
    assertThat(allPages(new ItemPageRequest("a", null, null, null, 4))).containsExactlyElementsOf(aDesc);
    List<Long> completed = allPages(new ItemPageRequest(null, WorkStatus.COMPLETED, null, null, 1));
    assertThat(completed).hasSize(2).isSortedAccordingTo((x, y) -> Long.compare(y, x));
    assertThat(allPages(new ItemPageRequest("a", WorkStatus.COMPLETED, null, null, 10))).isEqualTo(completed);
    assertThat(allPages(new ItemPageRequest("b", WorkStatus.COMPLETED, null, null, 10))).isEmpty();
    assertThat(new OverviewQueries(store).page(new ItemPageRequest("a", WorkStatus.PENDING, null, null, 10))
        .items()).extracting(WorkItem::status).containsOnly(WorkStatus.PENDING).hasSize(4); // one retrying
  }

  @Test
  void textSearchFindsTheInputAndSaysWhenItStoppedAtItsBound() {
    enqueue("a", 3, "needle-");
    long oldest = new LeaseManager(store, "w").enqueue(NewWorkItem.of("a", "unique-hay"));
    enqueue("a", ItemPageRequest.TEXT_SCAN_ROWS, "straw-");
    OverviewQueries o = new OverviewQueries(store);
    ItemPage p = o.page(new ItemPageRequest(null, null, "unique-hay", null, 10));
    assertThat(p.items()).isEmpty();
    assertThat(p.searchIncomplete()).isTrue();
    assertThat(p.nextBeforeId()).isGreaterThan(oldest);
    ItemPage more = o.page(new ItemPageRequest(null, null, "unique-hay", p.nextBeforeId(), 10));
    assertThat(more.items()).extracting(WorkItem::id).containsExactly(oldest);
    assertThat(more.searchIncomplete()).isFalse();
    assertThat(more.nextBeforeId()).isNull();
    // with a queue filter too, and a page's worth of matches
    assertThat(allPages(new ItemPageRequest("a", null, "needle-", oldest, 2))).hasSize(3);
  }

  @Test
  void listingsReadOnlyAPrefixOfALargeInput() {
    String big = "x".repeat(66_000);
    new LeaseManager(store, "w").enqueue(NewWorkItem.of("a", big));
    WorkItem w = new OverviewQueries(store).page(ItemPageRequest.newest(1)).items().get(0);
    assertThat(w.input()).hasSize(OverviewQueries.INPUT_PREFIX_BYTES);
    assertThat(w.output()).isNull();
  }

  @Test
  void countsStopAtTheCapAndQueuesComeFromTheIndex() {
    enqueue("b", 7, "b");
    enqueue("a", 2, "a");
    enqueue("c", 1, "c");
    OverviewQueries o = new OverviewQueries(store);
    assertThat(o.queues(10)).containsExactly("a", "b", "c");
    assertThat(o.queues(2)).containsExactly("a", "b");
    Map<String, Map<WorkStatus, CappedCount>> counts = o.counts(List.of("a", "b"), 5);
    assertThat(counts.get("a").get(WorkStatus.PENDING)).isEqualTo(new CappedCount(2, false));
    assertThat(counts.get("b").get(WorkStatus.PENDING)).isEqualTo(new CappedCount(5, true));
    assertThat(counts.get("b").get(WorkStatus.FAILED)).isEqualTo(new CappedCount(0, false));
    assertThat(o.totals(5).get(WorkStatus.PENDING)).isEqualTo(new CappedCount(5, true));
    assertThat(o.totals(10).get(WorkStatus.PENDING)).isEqualTo(new CappedCount(10, false));
  }

  @Test
  void inFlightAndScheduledAndRetryingItemsWithTheirDueTimes() {
    LeaseManager w = new LeaseManager(store, "w",
        LeaseManagerConfig.defaults().withRetryBackoff(Duration.ofMinutes(2), Duration.ofMinutes(2)));
    long later = w.enqueue(NewWorkItem.builder("a").input("later").delay(Duration.ofMinutes(10)).build());
    long retry = w.enqueue(NewWorkItem.builder("b").input("flaky").maxAttempts(3).build());
    long running = w.enqueue(NewWorkItem.of("c", "runs"));
    Lease l = w.acquire("b", LEASE).orElseThrow();
    w.release(retry, l.token(), false, null, "flaky");
    w.acquire("c", LEASE).orElseThrow();
    OverviewQueries o = new OverviewQueries(store);
    assertThat(o.inFlight(10)).extracting(WorkItem::id).containsExactly(running);
    List<WorkItem> s = o.scheduled(o.queues(10), 10);
    assertThat(s).extracting(WorkItem::id).containsExactly(retry, later);
    assertThat(s.get(0).deliveryCount()).isEqualTo(1);
    assertThat(s.get(0).availableAt()).isEqualTo(clock.instant().plus(Duration.ofMinutes(2)));
    assertThat(s.get(1).availableAt()).isEqualTo(clock.instant().plus(Duration.ofMinutes(10)));
    assertThat(o.scheduled(o.queues(10), 1)).extracting(WorkItem::id).containsExactly(retry);
  }

  @Test
  void throughputCountsEachMinuteAndMarksWhereTheBoundCut() {
    LeaseManager w = new LeaseManager(store, "w");
    enqueue("a", 4, "a");
    w.enqueue(NewWorkItem.builder("f").input("fails").maxAttempts(1).build());
    clock.advance(Duration.ofSeconds(30)); // 10:00:30
    for (int i = 0; i < 2; i++) {
      Lease l = w.acquire("a", LEASE).orElseThrow();
      w.complete(l.itemId(), l.token(), null);
    }
    clock.advance(Duration.ofMinutes(1)); // 10:01:30
    Lease f = w.acquire("f", Duration.ofSeconds(10)).orElseThrow();
    w.release(f.itemId(), f.token(), false, null, "no retries left");
    Lease e = w.acquire("a", Duration.ofSeconds(10)).orElseThrow();
    Lease h = w.acquire("a", LEASE).orElseThrow();
    w.handBack(h.itemId(), h.token(), Duration.ZERO);
    clock.advance(Duration.ofSeconds(20)); // 10:01:50: e's lease expired
    new RecoverySweep(store).scanAndRecover();
    assertThat(w.find(e.itemId()).orElseThrow().status()).isEqualTo(WorkStatus.PENDING);
    assertThat(w.find(f.itemId()).orElseThrow().status()).isEqualTo(WorkStatus.FAILED);
    List<ThroughputMinute> t = new OverviewQueries(store).throughput(3, 1000);
    assertThat(t).extracting(ThroughputMinute::minute).extracting(Object::toString)
        .containsExactly("2026-03-01T09:59:00Z", "2026-03-01T10:00:00Z", "2026-03-01T10:01:00Z");
    assertThat(t.get(0).completed()).isZero();
    assertThat(t.get(1).completed()).isEqualTo(2);
    assertThat(t.get(2).failed()).isEqualTo(1);
    assertThat(t.get(2).redelivered()).isEqualTo(2); // one expiry, one hand-back
    assertThat(t).noneMatch(ThroughputMinute::partial);
    // read only the newest finished item: the minute before is a lower bound
    List<ThroughputMinute> cut = new OverviewQueries(store).throughput(3, 1);
    assertThat(cut).allMatch(ThroughputMinute::partial);
    assertThat(cut.get(2).failed()).isEqualTo(1);
    assertThat(cut.get(1).completed()).isZero();
  }

  @Test
  void theOverviewReadsWhatTheSeparateQueriesRead() {
    LeaseManager w = new LeaseManager(store, "w",
        LeaseManagerConfig.defaults().withRetryBackoff(Duration.ofMinutes(2), Duration.ofMinutes(2)));
    enqueue("a", 4, "a");
    enqueue("b", 3, "b");
    enqueue("c", 2, "c");
    w.enqueue(NewWorkItem.builder("c").input("later").delay(Duration.ofMinutes(5)).build());
    Lease l = w.acquire("a", LEASE).orElseThrow();
    w.release(l.itemId(), l.token(), false, null, "flaky");
    w.acquire("b", LEASE).orElseThrow();
    new WorkerRegistry(store).register(new WorkerInfo.Registration("w1", "h", 1, "v", List.of("a"), 1, 1),
        Duration.ofSeconds(10));
    OverviewQueries o = new OverviewQueries(store);
    ItemPageRequest page = new ItemPageRequest("a", null, null, null, 2);
    StoreOverview v = o.overview(page, 3, 2, 5);
    assertThat(v.now()).isEqualTo(clock.instant());
    assertThat(v.queues()).containsExactly("a", "b");
    assertThat(v.moreQueues()).isTrue();
    assertThat(v.totals()).isEqualTo(o.totals(3)); // more queues than counted: counted over all
    StoreOverview all = o.overview(page, 3, 5, 5);
    assertThat(all.moreQueues()).isFalse();
    // every queue counted: sums, capped where a queue's count is (a: 3+, b: 2, c: 3 pending)
    assertThat(all.totals().get(WorkStatus.PENDING)).isEqualTo(new CappedCount(3 + 2 + 3, true));
    assertThat(all.totals().get(WorkStatus.IN_PROGRESS)).isEqualTo(new CappedCount(1, false));
    assertThat(v.counts()).isEqualTo(o.counts(List.of("a", "b"), 3));
    assertThat(v.counts().get("a").get(WorkStatus.PENDING)).isEqualTo(new CappedCount(3, true));
    assertThat(v.inFlight()).extracting(WorkItem::id).isEqualTo(o.inFlight(5).stream().map(WorkItem::id).toList());
    assertThat(v.inFlight()).hasSize(1);
    assertThat(v.scheduled()).extracting(WorkItem::id)
        .isEqualTo(o.scheduled(List.of("a", "b"), 5).stream().map(WorkItem::id).toList());
    assertThat(v.scheduled()).hasSize(1); // the retrying one of queue a; c was not counted
    assertThat(v.workers()).extracting(WorkerInfo::workerId).containsExactly("w1");
    assertThat(v.page().items()).extracting(WorkItem::id)
        .isEqualTo(o.page(page).items().stream().map(WorkItem::id).toList());
    assertThat(v.page().items()).hasSize(2);
  }
}
