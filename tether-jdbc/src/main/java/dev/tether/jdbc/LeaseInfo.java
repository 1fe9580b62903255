package dev.tether.jdbc;

import java.time.Duration;
import java.time.Instant;

/**
 * A lease in flight, as seen by {@link QueueMonitor}.
 *
 * @param itemId the item
 * @param queue the queue
 * @param holder the worker holding it
 * @param token the lease token
 * @param deliveryCount the delivery number
 * @param acquiredAt when acquired
 * @param heartbeatAt last renewal (or acquisition)
 * @param expiresAt expiry
 * @param heartbeatAge time since the last heartbeat, by the store clock
 * @param timeLeft time until expiry (negative once expired)
 */
public record LeaseInfo(
    long itemId,
    String queue,
    String holder,
    long token,
    int deliveryCount,
    Instant acquiredAt,
    Instant heartbeatAt,
    Instant expiresAt,
    Duration heartbeatAge,
    Duration timeLeft) {}
