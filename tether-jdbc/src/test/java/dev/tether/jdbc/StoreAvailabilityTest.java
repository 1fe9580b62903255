package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.test.SettableTicker;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.sqlite.SQLiteErrorCode;
import org.sqlite.SQLiteException;

/** The store availability signal, on a settable ticker (no database). */
class StoreAvailabilityTest {
  private final SettableTicker ticker = new SettableTicker();
  private final StoreAvailability availability = new StoreAvailability("test store", ticker);
  private final SQLException refused = new SQLException("Connection refused", "08001");

  @Test
  void availableUntilAFaultThenAgainAfterACallStartedLaterWorks() {
    assertThat(availability.isAvailable()).isTrue();
    long before = availability.begin();
    availability.succeeded(before, false);
    assertThat(availability.isAvailable()).isTrue();

    availability.failed("acquiring", refused, false);
    assertThat(availability.isAvailable()).isFalse();
    assertThat(availability.outages()).isEqualTo(1);

    long during = availability.begin();
    availability.failed("renewing", refused, false); // a second fault in the same outage
    assertThat(availability.outages()).isEqualTo(1);
    availability.succeeded(during, false); // began before the second fault: proves nothing
    assertThat(availability.isAvailable()).isFalse();

    long after = availability.begin();
    ticker.advance(Duration.ofMillis(2_300));
    availability.succeeded(after, false);
    assertThat(availability.isAvailable()).isTrue();
  }

  @Test
  void aCallInFlightBeforeTheFaultDoesNotEndTheOutageWhenItSucceedsLate() {
    long inFlight = availability.begin();
    availability.failed("acquiring", refused, false);
    availability.succeeded(inFlight, false);
    assertThat(availability.isAvailable()).isFalse();
  }

  @Test
  void anOutageWithAWriteFaultEndsOnlyWithAWriteNotARead() {
    availability.failed("completing item 11", new SQLiteException(
        "[SQLITE_FULL] database or disk is full", SQLiteErrorCode.SQLITE_FULL), true);
    availability.succeeded(availability.begin(), false); // a read works on a full disk
    assertThat(availability.isAvailable()).isFalse();
    availability.succeeded(availability.begin(), true);
    assertThat(availability.isAvailable()).isTrue();

    availability.failed("acquiring", refused, false); // connectivity: a read proves it is back
    availability.failed("completing", new SQLException("disk full", "53100"), true);
    availability.succeeded(availability.begin(), false);
    assertThat(availability.isAvailable()).as("the write fault joined the outage").isFalse();
    availability.succeeded(availability.begin(), true);
    assertThat(availability.isAvailable()).isTrue();

    availability.failed("acquiring", refused, false);
    availability.succeeded(availability.begin(), false);
    assertThat(availability.isAvailable()).isTrue();
  }

  @Test
  void aFlappingStoreIsLoggedAtMostOncePerIntervalButEveryOutageCounts() {
    for (int i = 0; i < 10; i++) {
      availability.failed("acquiring", refused, false);
      assertThat(availability.isAvailable()).isFalse();
      availability.succeeded(availability.begin(), false);
      assertThat(availability.isAvailable()).isTrue();
      ticker.advance(Duration.ofSeconds(1));
    }
    assertThat(availability.outages()).isEqualTo(10);
    assertThat(availability.loggedOutages()).isEqualTo(1);

    ticker.advance(StoreAvailability.LOG_INTERVAL);
    availability.failed("acquiring", refused, false);
    assertThat(availability.loggedOutages()).isEqualTo(2);
    assertThat(availability.outages()).isEqualTo(11);
  }

  @Test
  void aLongOutageSoonAfterALoggedOneIsLoggedOnceItLasts() {
    availability.failed("completing", refused, false);
    availability.succeeded(availability.begin(), false);
    ticker.advance(Duration.ofSeconds(5)); // within the log interval
    availability.failed("acquiring", refused, false);
    assertThat(availability.loggedOutages()).as("too soon: DEBUG").isEqualTo(1);
    ticker.advance(Duration.ofMillis(400));
    availability.failed("acquiring", refused, false);
    assertThat(availability.loggedOutages()).as("0.4 s: still short").isEqualTo(1);
    ticker.advance(StoreAvailability.LONG_OUTAGE);
    availability.failed("acquiring", refused, false);
    assertThat(availability.loggedOutages()).as("1.4 s: logged").isEqualTo(2);
    availability.failed("acquiring", refused, false);
    assertThat(availability.loggedOutages()).as("once").isEqualTo(2);
    assertThat(availability.outages()).isEqualTo(2);
  }

  @Test
  void storeFaultsAreConnectivityResourcesAndBrokenFilesNotRefusals() {
    StoreEngine postgres = new PostgresEngine(TetherStoreConfig.defaults());
    StoreEngine sqlite = new SqliteEngine(TetherStoreConfig.defaults(), false);
    for (String state : new String[] {"08006", "08001", "57P01", "53100", "53300", "58030", "XX001"}) {
      assertThat(StoreErrors.isStoreFault(postgres, new SQLException("x", state))).as(state).isTrue();
    }
    for (String state : new String[] {"23505", "42601", "22001", "40001", "40P01", "57014"}) {
      assertThat(StoreErrors.isStoreFault(postgres, new SQLException("x", state))).as(state).isFalse();
    }
    for (StoreEngine engine : new StoreEngine[] {postgres, sqlite}) {
      assertThat(StoreErrors.isStoreFault(engine, new SQLTransientConnectionException("pool timeout"))).isTrue();
    }
    for (SQLiteErrorCode code : new SQLiteErrorCode[] {
        SQLiteErrorCode.SQLITE_FULL, SQLiteErrorCode.SQLITE_READONLY, SQLiteErrorCode.SQLITE_IOERR_WRITE,
        SQLiteErrorCode.SQLITE_CORRUPT, SQLiteErrorCode.SQLITE_CANTOPEN, SQLiteErrorCode.SQLITE_NOTADB,
        SQLiteErrorCode.SQLITE_BUSY}) {
      assertThat(StoreErrors.isStoreFault(sqlite, new SQLiteException("[" + code.name() + "] x", code))).as(code.name()).isTrue();
    }
    for (SQLiteErrorCode code : new SQLiteErrorCode[] {
        SQLiteErrorCode.SQLITE_CONSTRAINT_UNIQUE, SQLiteErrorCode.SQLITE_ERROR,
        SQLiteErrorCode.SQLITE_TOOBIG}) {
      assertThat(StoreErrors.isStoreFault(sqlite, new SQLiteException("[" + code.name() + "] x", code))).as(code.name()).isFalse();
    }
  }
}
