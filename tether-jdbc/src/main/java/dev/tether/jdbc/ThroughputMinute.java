package dev.tether.jdbc;

import java.time.Instant;

/**
 * What happened in one minute, from {@link OverviewQueries#throughput}.
 *
 * @param minute the minute's start (on the store's clock)
 * @param completed items that completed in it
 * @param failed items that ended failed (dead-lettered) in it
 * @param redelivered deliveries that ended so that the item runs again: lease expiries and
 *     hand-backs ({@link Checkpoint#LEASE_EXPIRED}, {@link Checkpoint#HANDED_BACK})
 * @param partial true when the bounded read stopped inside this minute, so the counts are lower
 *     bounds
 */
public record ThroughputMinute(Instant minute, long completed, long failed, long redelivered, boolean partial) {}
