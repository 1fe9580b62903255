package dev.tether.jdbc;

/**
 * Totals of a {@link RecoverySweep} since it was created. Each
 * pass is counted exactly once. Immutable snapshot.
 *
 * @param running whether the background thread is running
 * @param totalScans passes completed
 * @param totalExpiredFound expired leases seen
 * @param totalRecovered items requeued
 * @param totalFailed items failed past their attempts
 * @param totalCheckpoints checkpoints written
 * @param totalErrors failed batches or passes
 * @param lastScan the last pass, or null before the first
 */
public record SweepStatistics(
    boolean running,
    long totalScans,
    long totalExpiredFound,
    long totalRecovered,
    long totalFailed,
    long totalCheckpoints,
    long totalErrors,
    RecoveryStats lastScan) {

  SweepStatistics plus(RecoveryStats s) {
    return new SweepStatistics(running, totalScans + 1, totalExpiredFound + s.expiredFound(),
        totalRecovered + s.recovered(), totalFailed + s.failed(),
        totalCheckpoints + s.checkpointsCreated(), totalErrors + s.errors(), s);
  }

  SweepStatistics withRunning(boolean r) {
    return new SweepStatistics(r, totalScans, totalExpiredFound, totalRecovered, totalFailed,
        totalCheckpoints, totalErrors, lastScan);
  }
}
