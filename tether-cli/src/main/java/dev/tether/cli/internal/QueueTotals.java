package dev.tether.cli.internal;

import dev.tether.jdbc.QueueCount;
import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.WorkStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The item counts of one queue by status, as {@code stats}, the dashboard and {@code /metrics}
 * show them (every status present, zero when no item has it).
 *
 * @param queue the queue
 * @param pending pending items
 * @param inProgress in-progress items
 * @param completed completed items
 * @param failed failed items
 * @param cancelled cancelled items
 */
public record QueueTotals(
    String queue, long pending, long inProgress, long completed, long failed, long cancelled) {

  /**
   * Reads the counts of every queue that holds an item.
   *
   * @param monitor the store's monitor
   * @return the counts, ordered by queue name
   * @throws dev.tether.jdbc.TetherStoreException if the store cannot be read
   */
  public static List<QueueTotals> of(QueueMonitor monitor) {
    return of(monitor.countsByStatus());
  }

  /**
   * Folds per-status counts into one row per queue.
   *
   * @param counts counts by queue and status
   * @return the counts, ordered by queue name
   */
  public static List<QueueTotals> of(List<QueueCount> counts) {
    Map<String, long[]> by = new TreeMap<>();
    for (QueueCount q : counts) {
      long[] a = by.computeIfAbsent(q.queue(), k -> new long[WorkStatus.values().length]);
      a[q.status().ordinal()] += q.count();
    }
    List<QueueTotals> out = new ArrayList<>(by.size());
    by.forEach((q, a) -> out.add(new QueueTotals(q, a[WorkStatus.PENDING.ordinal()],
        a[WorkStatus.IN_PROGRESS.ordinal()], a[WorkStatus.COMPLETED.ordinal()],
        a[WorkStatus.FAILED.ordinal()], a[WorkStatus.CANCELLED.ordinal()])));
    return out;
  }
}
