package dev.tether.mailbox;

import dev.tether.test.SettableClock;
import java.util.Objects;

/**
 * What the contract suites ask of a mailbox under test.
 *
 * @param clock the clock the mailbox must use for every instant and every expiry decision (a
 *     JDBC mailbox uses it in place of the database clock)
 * @param maxAttempts the budget: charged attempts after which a message is dead-lettered
 * @param capacity most messages not yet finalized; 0 for unbounded
 */
public record MailboxSpec(SettableClock clock, int maxAttempts, int capacity) {
  /** Validates the spec. */
  public MailboxSpec {
    Objects.requireNonNull(clock, "clock");
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts must be >= 1, was " + maxAttempts);
    }
    if (capacity < 0) {
      throw new IllegalArgumentException("capacity must be >= 0, was " + capacity);
    }
  }
}
