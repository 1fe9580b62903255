package dev.tether.jdbc;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;

/**
 * One worker process as the registry ({@link WorkerRegistry}) holds it.
 *
 * @param workerId the process's worker id (for example {@code host:pid}), unique per store
 * @param host the host name
 * @param pid the process id
 * @param version the Tether version the process runs
 * @param queues the queues its loops serve
 * @param loops how many loops it runs
 * @param concurrency how many items it runs at once at most
 * @param inFlight the leases its loops hold now (as holder {@code workerId} or {@code workerId/...}),
 *     else, when none does, how many items it said it was running at its last refresh
 * @param refreshInterval how often it refreshes its row
 * @param startedAt when it registered (the store's clock)
 * @param lastSeenAt its last refresh (the store's clock)
 * @param sinceSeen time from {@code lastSeenAt} to the store's now when read, never negative
 * @param gone true when it was not seen for {@value WorkerRegistry#GONE_AFTER_REFRESHES} refresh
 *     intervals: it died or lost the store
 */
public record WorkerInfo(
    String workerId,
    String host,
    long pid,
    String version,
    List<String> queues,
    int loops,
    int concurrency,
    int inFlight,
    Duration refreshInterval,
    Instant startedAt,
    Instant lastSeenAt,
    Duration sinceSeen,
    boolean gone) {

  /** Copies the queue list and checks the ids. */
  public WorkerInfo {
    Objects.requireNonNull(workerId, "workerId");
    queues = List.copyOf(queues);
  }

  /**
   * What a process says of itself when it registers.
   *
   * @param workerId its worker id, unique per store, not blank
   * @param host the host name
   * @param pid the process id
   * @param version the Tether version
   * @param queues the queues its loops serve
   * @param loops how many loops it runs
   * @param concurrency how many items it runs at once at most
   */
  public record Registration(String workerId, String host, long pid, String version, List<String> queues,
      int loops, int concurrency) {
    /**
     * Validates the registration.
     *
     * @throws IllegalArgumentException if the id is blank or a count is negative
     */
    public Registration {
      if (workerId == null || workerId.isBlank()) {
        throw new IllegalArgumentException("workerId must not be blank");
      }
      Objects.requireNonNull(host, "host");
      Objects.requireNonNull(version, "version");
      queues = List.copyOf(queues);
      if (loops < 0 || concurrency < 0) {
        throw new IllegalArgumentException("loops and concurrency must be >= 0");
      }
    }

    /**
     * Returns a registration for this JVM: host name (or {@code unknown}), its pid.
     *
     * @param workerId the worker id
     * @param version the Tether version
     * @param queues the queues served
     * @param loops how many loops
     * @param concurrency items at once at most
     * @return the registration
     */
    public static Registration ofThisProcess(String workerId, String version, List<String> queues, int loops,
        int concurrency) {
      String host;
      try {
        host = java.net.InetAddress.getLocalHost().getHostName();
      } catch (java.io.IOException | RuntimeException e) {
        host = "unknown";
      }
      return new Registration(workerId, host, ProcessHandle.current().pid(), version, queues, loops, concurrency);
    }
  }
}
