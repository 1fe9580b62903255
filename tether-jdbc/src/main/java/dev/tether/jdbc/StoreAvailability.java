package dev.tether.jdbc;

import dev.tether.Ticker;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether a {@link TetherStore} looks usable, from what its own calls have seen: unavailable from
 * the moment a call fails with a store fault (the database unreachable, a lost connection, a full
 * or read-only disk; not a refusal such as a stale lease token) or the notification listener loses
 * its connection, until a call <em>that started after the last fault</em> works again (or the
 * listener reconnects). A call already in flight when the fault happened proves nothing about the
 * database now, so its late success does not end the outage; this keeps the signal from
 * flickering back up during an outage. An outage that includes a write fault (a full or read-only
 * disk, an I/O error) ends only with a successful <em>write</em>: reads keep working on a full
 * disk and prove nothing about it.
 *
 * <p>Logging: one WARN when the store becomes unavailable (with the first fault) and one INFO
 * when it is available again (with the outage's duration and count of failed calls), never one
 * line per failed call. A flapping store is logged at most once per {@link #LOG_INTERVAL}: an
 * outage that begins sooner after the last logged one is logged at DEBUG and counted in the next
 * WARN, unless a call still fails {@link #LONG_OUTAGE} or more after it began: then it gets its
 * WARN (and its INFO at the end) after all.
 *
 * <p>Thread-safe. The hot path of a call that works while the store is available is two volatile
 * reads.
 */
final class StoreAvailability {
  private static final Logger LOG = LoggerFactory.getLogger(TetherStore.class);

  /** Shortest interval between two logged outages (WARN + INFO pairs). */
  static final Duration LOG_INTERVAL = Duration.ofSeconds(30);

  /** An outage still failing this long after it began is logged even within {@link #LOG_INTERVAL}. */
  static final Duration LONG_OUTAGE = Duration.ofSeconds(1);

  private final String description;
  private final Ticker ticker;
  private final Object lock = new Object();

  private volatile long faults; // count of faults so far; a call remembers it when it starts
  private volatile boolean available = true;

  // guarded by lock
  private long downSince;
  private boolean writeFault; // the current outage includes a fault only a write can clear
  private int failedCallsInOutage;
  private boolean outageLogged;
  private boolean everLogged;
  private long lastLoggedOutageStart;
  private int unloggedOutages;
  private long outages;
  private long loggedOutages;

  StoreAvailability(String description, Ticker ticker) {
    this.description = description;
    this.ticker = ticker;
  }

  /** Returns false while the store is known to be failing. */
  boolean isAvailable() {
    return available;
  }

  /** Returns how many outages began since the store opened (for tests and metrics). */
  long outages() {
    synchronized (lock) {
      return outages;
    }
  }

  /** Returns how many outages were logged at WARN (the rest, flapping, at DEBUG). */
  long loggedOutages() {
    synchronized (lock) {
      return loggedOutages;
    }
  }

  /** Called when a store call starts; pass the result to {@link #succeeded(long)}. */
  long begin() {
    return faults;
  }

  /**
   * A call that began at {@code ticket} worked: ends an outage if no fault happened since the call
   * began (and, if the outage includes a write fault, the call was a write).
   */
  void succeeded(long ticket, boolean write) {
    if (available) {
      return;
    }
    synchronized (lock) {
      if (available || ticket != faults || (writeFault && !write)) {
        return;
      }
      available = true;
      Duration took = Duration.ofNanos(ticker.read() - downSince);
      if (outageLogged) {
        LOG.info("Tether store on {} is available again after {} ms ({} failed calls)",
            description, took.toMillis(), failedCallsInOutage);
      } else {
        LOG.debug("Tether store on {} is available again after {} ms ({} failed calls)",
            description, took.toMillis(), failedCallsInOutage);
      }
    }
  }

  /**
   * A store call failed with a store fault: the store is unavailable from now on. A write fault
   * (the database answers but cannot write) is cleared only by a successful write.
   */
  void failed(String what, Throwable cause, boolean isWriteFault) {
    synchronized (lock) {
      faults++;
      if (!available) {
        failedCallsInOutage++;
        writeFault |= isWriteFault;
        long lasted = ticker.read() - downSince;
        if (!outageLogged && lasted >= LONG_OUTAGE.toNanos()) {
          LOG.warn("Tether store on {} has been unavailable for {} ms: {} failed: {}; readiness reports"
              + " it until a store call works again", description, lasted / 1_000_000, what, oneLine(cause));
          outageLogged = true;
          loggedOutages++;
          unloggedOutages = Math.max(0, unloggedOutages - 1);
          lastLoggedOutageStart = downSince;
        }
        return;
      }
      available = false;
      writeFault = isWriteFault;
      outages++;
      long now = ticker.read();
      downSince = now;
      failedCallsInOutage = 1;
      String reason = oneLine(cause);
      if (!everLogged || now - lastLoggedOutageStart >= LOG_INTERVAL.toNanos()) {
        String more = unloggedOutages == 0 ? ""
            : " (" + unloggedOutages + " more outages since the last one logged, logged at DEBUG)";
        LOG.warn("Tether store on {} is unavailable: {} failed: {}; readiness reports it until a"
            + " store call works again{}", description, what, reason, more);
        everLogged = true;
        outageLogged = true;
        loggedOutages++;
        lastLoggedOutageStart = now;
        unloggedOutages = 0;
      } else {
        LOG.debug("Tether store on {} is unavailable again: {} failed: {}", description, what, reason);
        outageLogged = false;
        unloggedOutages++;
      }
    }
  }

  private static String oneLine(Throwable t) {
    String msg = t.getMessage() == null ? t.getClass().getName() : t.getMessage();
    return msg.replaceAll("\\s+", " ");
  }

  @Override
  public String toString() {
    return "StoreAvailability[" + description + ", " + (available ? "available" : "unavailable") + "]";
  }
}
