/**
 * Durable work queues on SQLite (embedded, a file path) and PostgreSQL (shared by many worker
 * machines): leases with fencing tokens, redelivery of expired leases, and an audit trail.
 *
 * <p>Entry point: {@link dev.tether.jdbc.TetherStore#open(String)} (or with the caller's {@code
 * DataSource}), which migrates the schema. Then {@link dev.tether.jdbc.LeaseManager} (enqueue,
 * acquire, renew, release, redrive), {@link dev.tether.jdbc.RecoverySweep} (expired leases to
 * retries or failures, audit checkpoints, retention), {@link dev.tether.jdbc.HeartbeatThread}
 * (opt-in fixed-interval renewal), {@link dev.tether.jdbc.QueueMonitor} (counts, stale leases,
 * retry distribution, item listings and lookup), {@link dev.tether.jdbc.QueueAdmin} (operator
 * cancel and purge) and {@link dev.tether.jdbc.JdbcMailbox} (the core {@code Mailbox} contract
 * over the same table).
 *
 * <p>Every state change is a conditional update on (item id, lease token, status): a worker whose
 * lease was taken over can never renew, complete, fail or reply for the item ({@link
 * dev.tether.jdbc.LeaseConflictException}, {@link dev.tether.jdbc.LeaseExpiredException}). Lease
 * expiry is decided by one clock: the database's on PostgreSQL, the system clock on SQLite, or an
 * injected {@link java.time.Clock} in tests. Every exception of this package is a {@link
 * dev.tether.jdbc.TetherStoreException}.
 */
package dev.tether.jdbc;
