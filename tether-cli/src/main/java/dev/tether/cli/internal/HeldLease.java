package dev.tether.cli.internal;

/**
 * The lease a command run by {@code tether worker} holds, from its environment: {@code
 * TETHER_LEASE}, the receipt handle of the item's current delivery ({@code ID:TOKEN}, the token
 * in hexadecimal). Whoever has it can checkpoint and beat for that delivery, nobody else.
 *
 * @param itemId the item
 * @param token the lease token
 */
public record HeldLease(long itemId, long token) {
  /** The variable that holds the lease. */
  public static final String VARIABLE = "TETHER_LEASE";

  /**
   * Parses a receipt handle.
   *
   * @param handle {@code ID:TOKEN}
   * @return the lease
   * @throws IllegalArgumentException naming the variable and the expected form
   */
  public static HeldLease parse(String handle) {
    if (handle == null || handle.isBlank()) {
      throw new IllegalArgumentException(VARIABLE + " is not set: run this from a command that"
          + " 'tether worker' runs (it sets " + VARIABLE + " to the item's lease)");
    }
    int colon = handle.indexOf(':');
    try {
      if (colon > 0) {
        return new HeldLease(Long.parseLong(handle.substring(0, colon)),
            Long.parseUnsignedLong(handle.substring(colon + 1), 16));
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new IllegalArgumentException(VARIABLE + " is not a lease (ID:TOKEN as 'tether worker'"
        + " sets it); leave it as the worker set it");
  }
}
