package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Completions and renewals of many leases at once (the group committer's and the renewal
 * batcher's), each conditional on (id, token, status) and refused on its own: in one statement
 * where the engine has one, else one batched statement per lease. Methods run on the caller's
 * connection, inside the caller's transaction or, on PostgreSQL's one-statement paths,
 * auto-committed statement by statement ({@link StoreEngine#committedAlone}). Stateless apart
 * from its collaborators, so thread-safe.
 */
final class LeaseBatches {
  private static final Logger LOG = LoggerFactory.getLogger(LeaseBatches.class);

  /**
   * One completion: the lease, its output, and the instant it completes at (null only where the
   * engine's one statement reads the database clock itself).
   */
  record Finish(long id, long token, byte[] output, Instant now) {
    LeaseKey key() {
      return new LeaseKey(id, token);
    }
  }

  /**
   * One renewal: the lease, the extension, the instant (null only where the engine's one
   * statement reads the database clock itself), and the delivery's latest output to write with it,
   * or null.
   */
  record Renewal(long id, long token, Duration duration, Instant now,
      dev.tether.mailbox.OutputTail output) {
    LeaseKey key() {
      return new LeaseKey(id, token);
    }
  }

  /**
   * What became of one renewal: the new expiry, or the refusal (then nothing changed).
   *
   * @param expiry the new expiry, or null when refused
   * @param refusal why it was refused, or null when renewed
   */
  record Renewed(Instant expiry, TetherStoreException refusal) {}

  private final StoreEngine engine;
  private final Statements statements;
  private final LeaseDiagnosis diagnosis;
  private final LeaseOperations leases;

  LeaseBatches(StoreEngine engine, Statements statements, LeaseDiagnosis diagnosis, LeaseOperations leases) {
    this.engine = engine;
    this.statements = statements;
    this.diagnosis = diagnosis;
    this.leases = leases;
  }

  /**
   * Completes several leases. Returns, in the order given, null for each that completed and the
   * exception explaining the refusal of each whose update matched nothing (which changed nothing).
   */
  List<TetherStoreException> completeAll(Connection c, List<Finish> finishes) throws SQLException {
    if (finishes.isEmpty()) {
      return List.of();
    }
    Optional<Set<LeaseKey>> applied = engine.completeInOneStatement(c, finishes);
    if (applied.isPresent()) {
      List<LeaseKey> keys = new ArrayList<>(finishes.size());
      for (Finish f : finishes) {
        keys.add(f.key());
      }
      return diagnosis.outcomes(c, keys, applied.get(), "complete");
    }
    for (Finish f : finishes) {
      if (f.now() == null) {
        throw new IllegalArgumentException("completion of item " + f.id() + " has no instant;"
            + " only a completion the engine runs as one statement may leave it to the database clock");
      }
    }
    int[] counts;
    try (StatementCache.Stmt st = statements.prepare(c, LeaseOperations.COMPLETE)) {
      PreparedStatement ps = st.ps();
      for (Finish f : finishes) {
        engine.setBytes(ps, 1, f.output());
        engine.setInstant(ps, 2, f.now());
        engine.setInstant(ps, 3, f.now());
        ps.setLong(4, f.id());
        ps.setLong(5, f.token());
        ps.addBatch();
      }
      counts = ps.executeBatch();
    }
    List<TetherStoreException> out = new ArrayList<>(finishes.size());
    LeaseDiagnosis.Refusals refusals = diagnosis.refusals(c);
    for (int i = 0; i < finishes.size(); i++) {
      if (counts[i] == Statement.SUCCESS_NO_INFO || counts[i] < 0) {
        throw new IllegalStateException("the JDBC driver did not report the update count of a"
            + " conditional completion (" + counts[i] + "); cannot tell which items completed");
      }
      Finish f = finishes.get(i);
      out.add(counts[i] == 1 ? null : refusals.diagnose(f.id(), f.token(), "complete"));
    }
    return out;
  }

  /**
   * Renews several leases, each to {@code max(current expiry, now + duration)}. Returns, in
   * order, what became of each. Two renewals of one lease in a batch both get the later of their
   * expiries.
   */
  List<Renewed> renewAll(Connection c, List<Renewal> renewals) throws SQLException {
    List<Renewed> out = renewLeases(c, renewals);
    boolean renewalsCommitted = engine.committedAlone(c);
    try {
      writeOutputs(c, renewals, out);
    } catch (SQLException e) {
      if (!renewalsCommitted) {
        throw e; // one transaction: nothing of it holds
      }
      // The extensions committed on their own: they hold, only their output tails are lost (a
      // later extension or the ending writes newer ones). Failing the batch would tell callers
      // their leases were not extended.
      LOG.warn("Lease extensions committed, but writing their output tails failed: {}", e.getMessage());
    }
    return out;
  }

  /**
   * Writes the output carried by each applied renewal, in one batched statement: the renewal
   * already matched the lease in this transaction, so each matches again.
   */
  private void writeOutputs(Connection c, List<Renewal> renewals, List<Renewed> outcomes)
      throws SQLException {
    Instant databaseNow = null;
    PreparedStatement ps = null;
    StatementCache.Stmt st = null;
    try {
      for (int i = 0; i < renewals.size(); i++) {
        Renewal r = renewals.get(i);
        if (r.output() == null || outcomes.get(i).expiry() == null) {
          continue;
        }
        Instant now = r.now();
        if (now == null) {
          if (databaseNow == null) {
            databaseNow = engine.now(c);
          }
          now = databaseNow;
        }
        if (ps == null) {
          st = statements.prepare(c, LeaseOperations.RECORD_OUTPUT);
          ps = st.ps();
        }
        LeaseOperations.bindOutput(engine, ps, r.id(), r.token(), r.output(), now);
        ps.addBatch();
      }
      if (ps != null) {
        ps.executeBatch();
      }
    } finally {
      if (st != null) {
        st.close();
      }
    }
  }

  private List<Renewed> renewLeases(Connection c, List<Renewal> renewals) throws SQLException {
    List<Renewed> out = new ArrayList<>(renewals.size());
    Optional<Map<LeaseKey, Instant>> renewed = engine.renewInOneStatement(c, renewals);
    if (renewed.isEmpty()) {
      for (Renewal r : renewals) {
        try {
          out.add(new Renewed(leases.renew(c, r.id(), r.token(), r.now(), r.duration()), null));
        } catch (TetherStoreException refused) {
          out.add(new Renewed(null, refused));
        }
      }
      return out;
    }
    Map<LeaseKey, TetherStoreException> refusals = new HashMap<>();
    LeaseDiagnosis.Refusals diagnoses = diagnosis.refusals(c);
    for (Renewal r : renewals) {
      Instant expiry = renewed.get().get(r.key());
      if (expiry != null) {
        out.add(new Renewed(expiry, null));
        continue;
      }
      TetherStoreException e = refusals.get(r.key());
      if (e == null) {
        e = diagnoses.diagnose(r.id(), r.token(), "renew");
        refusals.put(r.key(), e);
      }
      out.add(new Renewed(null, e));
    }
    return out;
  }
}
