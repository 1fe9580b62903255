package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * The enqueue's SQL: inserts of new items (one, or many in runs the engine writes at once), with
 * idempotency keys honoured, and the counts a capacity check reads. Methods run on the caller's
 * connection inside the caller's transaction. Stateless apart from the engine, so thread-safe.
 */
final class Inserts {
  private static final String INSERT =
      "INSERT INTO tether_work_items (queue, task_id, work_type, status, priority, delivery_count,"
          + " max_attempts, available_at, idempotency_key, reply_to, input_data, created_at,"
          + " updated_at, scheduled, reply_of, reply_error, headers)"
          + " VALUES (?, ?, ?, 'pending', ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
          + " ON CONFLICT (queue, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING RETURNING id";

  /**
   * How many pending items a queue holds, as an SQL expression: two counts, each over one
   * partial index (ready, and scheduled for later); a plain {@code status = 'pending'} matches
   * neither index's predicate and would read the queue's history. Parameters: queue, queue.
   */
  static final String PENDING_COUNT =
      "(SELECT COUNT(*) FROM tether_work_items WHERE queue = ? AND status = 'pending' AND scheduled = FALSE)"
          + " + (SELECT COUNT(*) FROM tether_work_items WHERE queue = ? AND status = 'pending' AND scheduled = TRUE)";

  private final StoreEngine engine;

  Inserts(StoreEngine engine) {
    this.engine = engine;
  }

  /**
   * Whether a new item starts {@code scheduled} (kept out of the ready index until an acquisition
   * promotes it): when it was enqueued with a delay. The engines' array inserts say the same in SQL.
   */
  static boolean scheduled(NewWorkItem item) {
    return !item.delay().isZero();
  }

  /**
   * Inserts one item at {@code now}; with an idempotency key already present on the queue,
   * returns the existing item's id and writes nothing.
   */
  long insert(Connection c, NewWorkItem item, Instant now) throws SQLException {
    if (item.idempotencyKey() != null) {
      Optional<Long> existing = findByKey(c, item.queue(), item.idempotencyKey());
      if (existing.isPresent()) {
        return existing.get();
      }
    }
    try (PreparedStatement ps = c.prepareStatement(INSERT)) {
      ps.setString(1, item.queue());
      ps.setString(2, item.taskId());
      ps.setString(3, item.workType());
      ps.setInt(4, item.priority());
      ps.setInt(5, item.maxAttempts());
      engine.setInstant(ps, 6, now.plus(item.delay()));
      ps.setString(7, item.idempotencyKey());
      ps.setString(8, item.replyTo());
      engine.setBytes(ps, 9, item.inputUnsafe());
      engine.setInstant(ps, 10, now);
      engine.setInstant(ps, 11, now);
      ps.setBoolean(12, scheduled(item));
      if (item.replyOf() == null) {
        ps.setNull(13, java.sql.Types.BIGINT);
      } else {
        ps.setLong(13, item.replyOf());
      }
      ps.setBoolean(14, item.errorReply());
      ps.setString(15, item.headersColumn());
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          return rs.getLong(1);
        }
      }
    }
    // Lost an idempotency race to a concurrent enqueue with the same key: return its item.
    return findByKey(c, item.queue(), item.idempotencyKey())
        .orElseThrow(() -> new IllegalStateException("insert of an item on queue '" + item.queue()
            + "' returned no id and no item has its key; indicates a bug"));
  }

  /**
   * Inserts items in order, returning their ids in the same order. Runs of items without an
   * idempotency key go to the engine up to {@link StoreEngine#insertChunk()} at a time (one round
   * trip each); items with a key take the single-row path, which returns the existing item's id.
   */
  List<Long> insertAll(Connection c, List<NewWorkItem> items, Instant now) throws SQLException {
    List<Long> ids = new ArrayList<>(items.size());
    List<NewWorkItem> run = new ArrayList<>();
    int chunk = engine.insertChunk();
    for (NewWorkItem item : items) {
      if (item.idempotencyKey() == null) {
        run.add(item);
        if (run.size() == chunk) {
          ids.addAll(insertRun(c, run, now));
          run.clear();
        }
      } else {
        ids.addAll(insertRun(c, run, now));
        run.clear();
        ids.add(insert(c, item, now));
      }
    }
    ids.addAll(insertRun(c, run, now));
    return ids;
  }

  private List<Long> insertRun(Connection c, List<NewWorkItem> run, Instant now) throws SQLException {
    if (run.isEmpty()) {
      return List.of();
    }
    if (run.size() == 1) {
      return List.of(insert(c, run.get(0), now));
    }
    List<Long> ids = new ArrayList<>(engine.insertRun(c, run, now));
    if (ids.size() != run.size()) {
      throw new IllegalStateException("a multi-row insert of " + run.size()
          + " items returned " + ids.size() + " ids; indicates a bug");
    }
    // Ids come from one sequence (PostgreSQL) or rowid (SQLite), assigned in insertion order
    // within the statement; RETURNING does not promise an order, so restore it.
    ids.sort(Comparator.naturalOrder());
    return ids;
  }

  private Optional<Long> findByKey(Connection c, String queue, String key) throws SQLException {
    if (key == null) {
      return Optional.empty();
    }
    try (PreparedStatement ps =
        c.prepareStatement("SELECT id FROM tether_work_items WHERE queue = ? AND idempotency_key = ?")) {
      ps.setString(1, queue);
      ps.setString(2, key);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(rs.getLong(1)) : Optional.empty();
      }
    }
  }

  /** How many items of {@code queue} are pending or in progress. */
  long countUnfinished(Connection c, String queue) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT " + PENDING_COUNT
        + " + (SELECT COUNT(*) FROM tether_work_items WHERE queue = ? AND status = 'in_progress')")) {
      ps.setString(1, queue);
      ps.setString(2, queue);
      ps.setString(3, queue);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
