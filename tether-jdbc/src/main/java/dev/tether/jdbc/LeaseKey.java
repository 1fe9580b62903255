package dev.tether.jdbc;

/**
 * One lease as the store's conditional updates name it: the item and the token of the delivery.
 *
 * @param id the work item id
 * @param token the lease token
 */
record LeaseKey(long id, long token) {}
