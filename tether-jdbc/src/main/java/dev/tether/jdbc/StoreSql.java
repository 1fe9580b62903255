package dev.tether.jdbc;

/**
 * The SQL pieces of one store, each with one job, wired to the store's engine and a statement
 * source: the store's own set prepares statements afresh, the group committer's keeps its hot
 * statements prepared where the engine caches them. Holds no SQL itself. Immutable.
 *
 * @param inserts enqueues
 * @param acquisitions the full acquisition
 * @param expiredLeases expiry and reclaim
 * @param leases one holder's lease operations
 * @param batches completions and renewals of many leases
 * @param diagnosis why a conditional update matched nothing
 * @param reads whole items and dead-letter ids
 * @param monitor the monitor's listings and counts
 * @param operatorActions cancel and redrive
 * @param purges deletes of items and checkpoints
 * @param replies the error replies that answer requests ending without an output
 */
record StoreSql(
    Inserts inserts,
    Acquisitions acquisitions,
    ExpiredLeases expiredLeases,
    LeaseOperations leases,
    LeaseBatches batches,
    LeaseDiagnosis diagnosis,
    ItemReads reads,
    MonitorQueries monitor,
    OperatorActions operatorActions,
    Purges purges,
    Replies replies) {

  /** Wires every piece to {@code engine}, preparing the hot statements from {@code statements}. */
  static StoreSql of(StoreEngine engine, Statements statements) {
    Checkpoints checkpoints = new Checkpoints(engine);
    LeaseDiagnosis diagnosis = new LeaseDiagnosis(engine);
    Inserts inserts = new Inserts(engine);
    Replies replies = new Replies(engine, inserts);
    ExpiredLeases expired = new ExpiredLeases(engine, statements, replies);
    LeaseOperations leases = new LeaseOperations(engine, diagnosis, checkpoints, replies);
    ItemReads reads = new ItemReads(engine, checkpoints);
    return new StoreSql(
        inserts,
        new Acquisitions(engine, statements, expired, checkpoints),
        expired,
        leases,
        new LeaseBatches(engine, statements, diagnosis, leases),
        diagnosis,
        reads,
        new MonitorQueries(engine, reads),
        new OperatorActions(engine, checkpoints, replies),
        new Purges(engine),
        replies);
  }
}
