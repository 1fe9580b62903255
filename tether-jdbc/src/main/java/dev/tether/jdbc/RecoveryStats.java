package dev.tether.jdbc;

import java.time.Duration;

/**
 * The result of one {@link RecoverySweep#scanAndRecover()} pass. Immutable.
 *
 * @param expiredFound expired leases seen by the scan (some may have been renewed or taken over
 *     before the sweep could reclaim them; those are in neither {@code recovered} nor {@code
 *     failed})
 * @param recovered items requeued (back to {@code pending})
 * @param failed items marked {@code failed} because their deliveries reached {@code maxAttempts}
 * @param checkpointsCreated {@code lease_expired} checkpoints written (one per reclaimed item)
 * @param errors batches that failed with an exception (logged)
 * @param duration how long the pass took
 */
public record RecoveryStats(
    int expiredFound, int recovered, int failed, int checkpointsCreated, int errors, Duration duration) {}
