package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Works out why a conditional update on (id, token, status) matched no row, and turns that into
 * the exception the caller gets: the lease was taken over ({@link LeaseConflictException}), it is
 * no longer held or the item is gone ({@link LeaseExpiredException}), it was cancelled ({@link
 * ItemCancelledException}), or this lease already finalized the item ({@link
 * ItemFinalizedException}). Stateless apart from the engine, so
 * thread-safe.
 */
final class LeaseDiagnosis {
  private final StoreEngine engine;

  LeaseDiagnosis(StoreEngine engine) {
    this.engine = engine;
  }

  /**
   * The outcome of each of {@code attempted}, in order, after one statement applied {@code
   * applied}: null for each applied, the diagnosis of each other. A row is updated at most once
   * per statement, so of two attempts on one lease the first succeeds and the second is
   * diagnosed (already finalized), as if they had run in sequence. Empties {@code applied}.
   */
  List<TetherStoreException> outcomes(
      Connection c, List<LeaseKey> attempted, Set<LeaseKey> applied, String operation)
      throws SQLException {
    List<TetherStoreException> out = new ArrayList<>(attempted.size());
    Refusals refusals = refusals(c);
    Set<LeaseKey> appliedHere = new java.util.HashSet<>();
    for (LeaseKey k : attempted) {
      if (applied.remove(k)) {
        appliedHere.add(k);
        out.add(null);
      } else if (appliedHere.contains(k) && "complete".equals(operation)) {
        // the same lease completed earlier in this statement: finalized by this lease, no read
        out.add(new ItemFinalizedException(k.id(), k.token(), WorkStatus.COMPLETED.dbValue()));
      } else {
        out.add(refusals.diagnose(k.id(), k.token(), operation));
      }
    }
    return out;
  }

  /**
   * Diagnoses the refused members of one statement that has just run on {@code c}, whose
   * applied members are committed already if {@code c} auto-commits.
   *
   * @param c the connection the statement ran on
   * @return the diagnoses, one {@link Refusals#diagnose} per refused member
   * @throws SQLException if the connection cannot say whether it auto-commits
   */
  Refusals refusals(Connection c) throws SQLException {
    return new Refusals(c, engine.committedAlone(c));
  }

  /**
   * The diagnoses of one statement's refused members. In a transaction, a diagnosis that fails
   * fails the transaction, and with it every member, as it should. After an auto-committed
   * statement the applied members are committed: a diagnosis that fails then (the connection
   * lost in the moment between) must not report them failed too, so that refusal, and every one
   * after it, is a {@link LeaseExpiredException} that says its reason could not be read: a
   * refused member changed nothing, and the caller must stop working on the item either way
   * (its lease expired, was taken over, or the item was cancelled or already finalized). Not
   * thread-safe: one per statement.
   */
  final class Refusals {
    private final Connection c;
    private final boolean committed;
    private SQLException lost;

    private Refusals(Connection c, boolean committed) {
      this.c = c;
      this.committed = committed;
    }

    /**
     * Works out why the member on (id, token) matched nothing.
     *
     * @param id the item
     * @param token the member's lease token
     * @param operation what the member did, for the message
     * @return the exception that explains the refusal
     * @throws SQLException if the diagnosis failed inside a transaction
     */
    TetherStoreException diagnose(long id, long token, String operation) throws SQLException {
      if (lost == null) {
        try {
          return LeaseDiagnosis.this.diagnose(c, id, token, operation);
        } catch (SQLException e) {
          if (!committed) {
            throw e;
          }
          lost = e;
        }
      }
      LeaseExpiredException refused = new LeaseExpiredException(
          "cannot " + operation + " work item " + id + " with lease token " + token
              + ": the store did not apply it (nothing was changed), and reading why failed ("
              + lost.getMessage() + "): the lease expired, was taken over, or the item was"
              + " cancelled or finalized; stop working on it",
          id, token, null, null);
      refused.initCause(lost);
      return refused;
    }
  }

  /** Works out why a conditional {@code operation} on (id, token) matched nothing. */
  TetherStoreException diagnose(Connection c, long id, long token, String operation)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "SELECT status, lease_token, lease_holder, lease_expires_at FROM tether_work_items WHERE id = ?")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return new LeaseExpiredException(
              "cannot " + operation + " work item " + id + " with lease token " + token
                  + ": the item no longer exists (purged or deleted by retention); stop working on it",
              id, token, null, null);
        }
        String status = rs.getString("status");
        if (WorkStatus.CANCELLED.dbValue().equals(status)) {
          return new ItemCancelledException("cannot " + operation + " work item " + id
              + " with lease token " + token + ": the item was cancelled; stop working on it", id, token);
        }
        Long current = ItemReads.getLongOrNull(rs, "lease_token");
        String holder = rs.getString("lease_holder");
        boolean inProgress = WorkStatus.IN_PROGRESS.dbValue().equals(status);
        if (inProgress && current != null && current != token) {
          return new LeaseConflictException(
              "cannot " + operation + " work item " + id + " with lease token " + token
                  + ": it is held by " + holder + " with another lease (token " + current
                  + ", expires " + engine.getInstant(rs, "lease_expires_at")
                  + "); your lease expired and was taken over, stop working on it",
              id, token, holder, current);
        }
        boolean finished = WorkStatus.COMPLETED.dbValue().equals(status)
            || WorkStatus.FAILED.dbValue().equals(status);
        if (finished && current != null && current == token) {
          return new ItemFinalizedException(id, token, status);
        }
        if (inProgress && current != null && current == token) {
          return new IllegalStateLeaseException(
              "conditional " + operation + " of work item " + id + " with its current token " + token
                  + " matched no row although the lease is held; indicates a bug");
        }
        return new LeaseExpiredException(
            "cannot " + operation + " work item " + id + " with lease token " + token
                + ": the lease is no longer held (the item is now '" + status
                + "'; it expired and was reclaimed, was handed back, or was finalized through"
                + " another lease); stop working on it",
            id, token, status, holder);
      }
    }
  }

  /** Thrown for states that cannot happen; indicates a bug. */
  static final class IllegalStateLeaseException extends TetherStoreException {
    private static final long serialVersionUID = 1L;

    IllegalStateLeaseException(String message) {
      super(message);
    }
  }
}
