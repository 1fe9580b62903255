package dev.tether.jdbc;

import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * What a dashboard poll shows, read by {@link OverviewQueries#overview} on one connection.
 *
 * @param now the store's instant of the read
 * @param queues the queues counted, in name order
 * @param moreQueues true when the store holds more queues than were counted
 * @param totals counts over every queue, by status: the sums of {@code counts} (capped where a
 *     summand is, so "4,000+" means at least that many) when every queue was counted, else capped
 *     counts of their own
 * @param counts capped counts of each counted queue, by status
 * @param inFlight in-progress items, soonest lease expiry first
 * @param failed the newest failed items
 * @param scheduled pending items waiting for a due time (scheduled or retrying), soonest first
 * @param workers the fleet, as {@link WorkerRegistry#list()} gives it
 * @param page the requested page of items
 */
public record StoreOverview(
    Instant now,
    List<String> queues,
    boolean moreQueues,
    Map<WorkStatus, CappedCount> totals,
    Map<String, Map<WorkStatus, CappedCount>> counts,
    List<WorkItem> inFlight,
    List<WorkItem> failed,
    List<WorkItem> scheduled,
    List<WorkerInfo> workers,
    ItemPage page) {}
