package dev.tether.jdbc;

import java.util.Objects;

/**
 * Which items {@link QueueMonitor#items(ItemQuery)} lists: an optional queue and status filter, an
 * order and a limit. Immutable and validated on construction; the {@code with...} methods return
 * changed copies.
 *
 * <pre>{@code
 * monitor.items(ItemQuery.all().withQueue("builds").withStatus(WorkStatus.FAILED).withLimit(20));
 * }</pre>
 *
 * @param queue only items of this queue, or null for every queue; not blank
 * @param status only items in this status, or null for every status
 * @param order the order of the result
 * @param limit most items to return, 1 to {@value #MAX_LIMIT}
 */
public record ItemQuery(String queue, WorkStatus status, Order order, int limit) {
  /** Most items one query returns: {@value}. */
  public static final int MAX_LIMIT = 100_000;

  /** Items returned when no limit is given: {@value}. */
  public static final int DEFAULT_LIMIT = 50;

  /** The order of a listing. */
  public enum Order {
    /** Most recently enqueued first (descending id). */
    NEWEST_FIRST,
    /**
     * Soonest lease expiry first (items without a lease, such as pending ones, last), then by id;
     * the natural order of in-flight items. With status {@link WorkStatus#IN_PROGRESS} it reads an
     * index of the leases; with any other status, or none, the database sorts every item the
     * filters match, which on a large queue costs as much as the queue is long ({@link
     * #NEWEST_FIRST} reads indexes for every filter).
     */
    LEASE_EXPIRY_FIRST
  }

  /**
   * Validates the query.
   *
   * @throws NullPointerException if {@code order} is null
   * @throws IllegalArgumentException if {@code queue} is blank or {@code limit} is out of range
   */
  public ItemQuery {
    Objects.requireNonNull(order, "order");
    if (queue != null && queue.isBlank()) {
      throw new IllegalArgumentException("queue must be null (every queue) or not blank, was '" + queue + "'");
    }
    if (limit < 1 || limit > MAX_LIMIT) {
      throw new IllegalArgumentException("limit must be in 1.." + MAX_LIMIT + ", was " + limit);
    }
  }

  /**
   * Returns a query for every item, newest first, at most {@value #DEFAULT_LIMIT}.
   *
   * @return the query
   */
  public static ItemQuery all() {
    return new ItemQuery(null, null, Order.NEWEST_FIRST, DEFAULT_LIMIT);
  }

  /**
   * Returns a query for in-progress items of every queue, soonest lease expiry first.
   *
   * @param limit most items to return, 1 to {@value #MAX_LIMIT}
   * @return the query
   * @throws IllegalArgumentException if {@code limit} is out of range
   */
  public static ItemQuery inProgress(int limit) {
    return new ItemQuery(null, WorkStatus.IN_PROGRESS, Order.LEASE_EXPIRY_FIRST, limit);
  }

  /**
   * Returns a copy restricted to one queue (or to every queue).
   *
   * @param queue the queue, or null for every queue
   * @return the changed copy
   * @throws IllegalArgumentException if {@code queue} is blank
   */
  public ItemQuery withQueue(String queue) {
    return new ItemQuery(queue, status, order, limit);
  }

  /**
   * Returns a copy restricted to one status (or to every status).
   *
   * @param status the status, or null for every status
   * @return the changed copy
   */
  public ItemQuery withStatus(WorkStatus status) {
    return new ItemQuery(queue, status, order, limit);
  }

  /**
   * Returns a copy with another order.
   *
   * @param order the order
   * @return the changed copy
   * @throws NullPointerException if {@code order} is null
   */
  public ItemQuery withOrder(Order order) {
    return new ItemQuery(queue, status, order, limit);
  }

  /**
   * Returns a copy with another limit.
   *
   * @param limit most items to return, 1 to {@value #MAX_LIMIT}
   * @return the changed copy
   * @throws IllegalArgumentException if {@code limit} is out of range
   */
  public ItemQuery withLimit(int limit) {
    return new ItemQuery(queue, status, order, limit);
  }
}
