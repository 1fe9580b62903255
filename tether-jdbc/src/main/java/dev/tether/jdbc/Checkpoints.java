package dev.tether.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The audit trail's SQL: writes a checkpoint row and reads an item's checkpoints. Stateless apart
 * from the engine, so thread-safe.
 */
final class Checkpoints {
  /**
   * One checkpoint row: parameters, in order, item, kind, holder, token, deliveries, heartbeat,
   * reason, now, then twice the item and the delivery whose output tails the row keeps (copied
   * from the item's row when they are that delivery's; see {@link #bind}).
   */
  static final String INSERT =
      "INSERT INTO tether_work_item_checkpoints (item_id, kind, lease_holder, lease_token,"
          + " delivery_count, heartbeat_at, reason, created_at, stdout_tail, stderr_tail)"
          + " VALUES (?, ?, ?, ?, ?, ?, ?, ?,"
          + " (SELECT stdout_tail FROM tether_work_items WHERE id = ? AND output_delivery = ?),"
          + " (SELECT stderr_tail FROM tether_work_items WHERE id = ? AND output_delivery = ?))";

  /**
   * A checkpoint to write (its kind and instant are given beside it).
   *
   * @param itemId the item
   * @param holder the lease holder, or null
   * @param token the lease token, or null
   * @param deliveryCount the item's delivery count at that moment
   * @param heartbeatAt the lease's last heartbeat, or null
   * @param reason what happened, for operators
   */
  record Entry(long itemId, String holder, Long token, int deliveryCount, Instant heartbeatAt, String reason) {}

  private final StoreEngine engine;

  Checkpoints(StoreEngine engine) {
    this.engine = engine;
  }

  /** Writes one checkpoint of {@code kind} at {@code now}. */
  void insert(Connection c, String kind, Entry entry, Instant now) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(INSERT)) {
      bind(engine, ps, kind, entry, now);
      ps.addBatch();
      ps.executeBatch();
    }
  }

  /** Binds the parameters of {@link #INSERT}. */
  static void bind(StoreEngine engine, PreparedStatement ps, String kind, Entry e, Instant now)
      throws SQLException {
    ps.setLong(1, e.itemId());
    ps.setString(2, kind);
    ps.setString(3, e.holder());
    if (e.token() == null) {
      ps.setNull(4, Types.BIGINT);
    } else {
      ps.setLong(4, e.token());
    }
    ps.setInt(5, e.deliveryCount());
    engine.setInstant(ps, 6, e.heartbeatAt());
    ps.setString(7, e.reason());
    engine.setInstant(ps, 8, now);
    long outputOf = keepsOutput(kind, e.token()) ? e.itemId() : -1;
    ps.setLong(9, outputOf);
    ps.setInt(10, e.deliveryCount());
    ps.setLong(11, outputOf);
    ps.setInt(12, e.deliveryCount());
  }

  /**
   * Whether checkpoints of {@code kind} may keep the output tails of the delivery they name: every
   * kind but a redrive (an operator's action between deliveries). One entry's answer is {@link
   * #keepsOutput(String, Long)}.
   */
  static boolean keepsOutput(String kind) {
    return !Checkpoint.REDRIVEN.equals(kind);
  }

  /**
   * Whether an entry of {@code kind} written under lease {@code token} keeps the output tails of
   * the delivery it names: not a redrive, and not the cancellation of an item no lease held (a
   * pending item: its last delivery ended before, and its tails belong to the entry that ended
   * it). A progress takeover keeps tails (still empty as its delivery starts). Which entries end
   * their delivery is {@link Checkpoint#endsDelivery()}.
   */
  static boolean keepsOutput(String kind, Long token) {
    return keepsOutput(kind) && !(Checkpoint.CANCELLED.equals(kind) && token == null);
  }

  /** The checkpoints of one item, oldest first. */
  List<Checkpoint> of(Connection c, long itemId) throws SQLException {
    List<Checkpoint> out = new ArrayList<>();
    try (PreparedStatement ps =
        c.prepareStatement("SELECT * FROM tether_work_item_checkpoints WHERE item_id = ? ORDER BY id")) {
      ps.setLong(1, itemId);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(new Checkpoint(
              rs.getLong("id"),
              rs.getLong("item_id"),
              rs.getString("kind"),
              rs.getString("lease_holder"),
              ItemReads.getLongOrNull(rs, "lease_token"),
              rs.getInt("delivery_count"),
              engine.getInstant(rs, "heartbeat_at"),
              rs.getString("reason"),
              engine.getInstant(rs, "created_at"),
              rs.getString("stdout_tail"),
              rs.getString("stderr_tail")));
        }
      }
    }
    return out;
  }
}
