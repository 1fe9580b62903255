package dev.tether.jdbc;

/**
 * How many items of one queue are in one status.
 *
 * @param queue the queue
 * @param status the status
 * @param count the number of items
 */
public record QueueCount(String queue, WorkStatus status, long count) {}
