package dev.tether.jdbc;

/**
 * What one read-only look at a queue found, for a waiting receiver ({@link StoreEngine#probe}):
 * whether an item can be taken now, and in how many milliseconds the next one comes due (a
 * delayed item, or a lease that expires), or -1 when none is known.
 *
 * @param ready an item is available now (or a lease has expired)
 * @param dueInMillis milliseconds until the next delayed item or lease expiry, or -1
 */
record QueueProbe(boolean ready, long dueInMillis) {}
