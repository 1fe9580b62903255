package dev.tether.cli.internal;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tether.jdbc.Checkpoint;
import dev.tether.jdbc.Delivery;
import dev.tether.jdbc.ItemQuery;
import dev.tether.jdbc.QueueMonitor;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.WorkItem;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * Builds the documented JSON shapes of {@code ls}, {@code inspect} and {@code stats} (also served
 * by the dashboard's API). Field names are stable; see {@code docs/CLI.md}. Stateless.
 */
public final class Reports {
  private Reports() {}

  /**
   * Returns the command line of an item's payload, or the raw input when it is not a command.
   *
   * @param input the item input
   * @return display text
   */
  public static String commandOf(String input) {
    if (input == null) {
      return "";
    }
    try {
      return CommandSpec.fromJson(input).display();
    } catch (IllegalArgumentException e) {
      return input;
    }
  }

  /**
   * A progress checkpoint as text: as UTF-8 when it is valid UTF-8, else {@code base64:} and its
   * Base64 form.
   *
   * @param bytes the checkpoint
   * @return the text
   */
  public static String checkpointText(byte[] bytes) {
    try {
      return dev.tether.Codec.utf8().decode(bytes);
    } catch (IllegalArgumentException e) {
      return "base64:" + java.util.Base64.getEncoder().encodeToString(bytes);
    }
  }

  /**
   * One listing row as JSON.
   *
   * @param r the item (checkpoints not needed)
   * @return the object
   */
  public static ObjectNode row(WorkItem r) {
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("id", r.id());
    o.put("queue", r.queue());
    o.put("status", r.status().dbValue());
    o.put("priority", r.priority());
    o.put("delivery_count", r.deliveryCount());
    o.put("attempts", r.attempts());
    o.put("max_attempts", r.maxAttempts());
    o.put("lease_holder", r.leaseHolder());
    o.put("lease_expires_at", str(r.leaseExpiresAt()));
    o.put("heartbeat_at", str(r.heartbeatAt()));
    o.put("available_at", str(r.availableAt()));
    o.put("checkpoint_at", str(r.progressAt()));
    o.put("created_at", str(r.createdAt()));
    o.put("completed_at", str(r.completedAt()));
    o.put("error", r.errorMessage());
    o.put("command", commandOf(inputOf(r)));
    return o;
  }

  /**
   * A listing as a JSON array.
   *
   * @param rows the items
   * @return the array
   */
  public static ArrayNode rows(List<WorkItem> rows) {
    ArrayNode a = Json.MAPPER.createArrayNode();
    for (WorkItem r : rows) {
      a.add(row(r));
    }
    return a;
  }

  /**
   * An item with its attempts, checkpoints and output, as JSON: each delivery with the output
   * tails it ended with (or, while it runs, as of its last extension), and {@code output}, the
   * latest output of its current or last delivery.
   *
   * @param w the item (with checkpoints)
   * @param now the store's current instant, for ages
   * @return the object
   */
  public static ObjectNode item(WorkItem w, Instant now) {
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("id", w.id());
    o.put("queue", w.queue());
    o.put("status", w.status().dbValue());
    o.put("priority", w.priority());
    o.put("delivery_count", w.deliveryCount());
    o.put("attempts", w.attempts());
    o.put("max_attempts", w.maxAttempts());
    o.put("lease_holder", w.leaseHolder());
    o.put("lease_expires_at", str(w.leaseExpiresAt()));
    o.put("heartbeat_at", str(w.heartbeatAt()));
    o.put("available_at", str(w.availableAt()));
    o.put("idempotency_key", w.idempotencyKey());
    o.put("checkpoint", w.progress() == null ? null : checkpointText(w.progress()));
    o.put("checkpoint_at", str(w.progressAt()));
    if (w.progressDelivery() == null) {
      o.putNull("checkpoint_delivery");
    } else {
      o.put("checkpoint_delivery", w.progressDelivery());
    }
    o.put("created_at", str(w.createdAt()));
    o.put("started_at", str(w.startedAt()));
    o.put("completed_at", str(w.completedAt()));
    o.put("error", w.errorMessage());
    String input = w.input() == null ? null : TailBuffer.decode(w.input());
    o.put("command", commandOf(input));
    try {
      o.set("spec", Json.MAPPER.valueToTree(CommandSpec.fromJson(input)));
    } catch (IllegalArgumentException e) {
      o.putNull("spec");
    }
    String output = w.output() == null ? null : TailBuffer.decode(w.output());
    CommandResult result = CommandResult.fromJsonOrNull(output);
    if (result != null) {
      o.set("result", Json.MAPPER.valueToTree(result));
    } else {
      o.putNull("result");
    }
    ArrayNode cps = o.putArray("checkpoints");
    for (Checkpoint c : w.checkpoints()) {
      ObjectNode n = cps.addObject();
      n.put("kind", c.kind());
      n.put("delivery", c.deliveryCount());
      n.put("lease_holder", c.leaseHolder());
      n.put("last_heartbeat", str(c.lastHeartbeat()));
      n.put("reason", c.reason());
      n.put("at", str(c.createdAt()));
      n.put("ends_delivery", c.endsDelivery());
    }
    o.put("heartbeat_age_ms", age(w.heartbeatAt(), now));
    ObjectNode live = o.putObject("output");
    boolean current = w.outputDelivery() != null && w.outputDelivery() == w.deliveryCount();
    live.put("delivery", w.deliveryCount());
    live.put("stdout_tail", current ? w.stdoutTail() : null);
    live.put("stderr_tail", current ? w.stderrTail() : null);
    live.put("output_at", current ? str(w.outputAt()) : null);
    live.put("output_age_ms", current ? age(w.outputAt(), now) : null);
    if (result != null && w.status() == dev.tether.jdbc.WorkStatus.COMPLETED) {
      live.put("stdout_tail", result.stdoutTail());
      live.put("stderr_tail", result.stderrTail());
    }
    live.put("finished", w.status().isFinished());
    ArrayNode deliveries = o.putArray("deliveries");
    for (Delivery d : w.deliveries()) {
      ObjectNode a = deliveries.addObject();
      a.put("delivery", d.number());
      a.put("outcome", d.outcome());
      if (!d.isUnknown()) {
        a.put("holder", d.holder());
        a.put("reason", d.reason());
        a.put("at", str(d.at()));
      }
      // a completed command's tails are its result's
      boolean completedHere = d.number() == w.deliveryCount() && result != null
          && w.status() == dev.tether.jdbc.WorkStatus.COMPLETED;
      a.put("stdout_tail", completedHere ? result.stdoutTail() : d.stdoutTail());
      a.put("stderr_tail", completedHere ? result.stderrTail() : d.stderrTail());
    }
    return o;
  }

  /** Milliseconds from {@code then} to {@code now}, never negative, or null. */
  private static Long age(Instant then, Instant now) {
    return then == null || now == null ? null : Math.max(0, Duration.between(then, now).toMillis());
  }

  /**
   * The statistics object: totals over all queues at the top ({@code pending}, {@code
   * in_progress}, {@code completed}, {@code failed}), per-queue counts in {@code queues}, in-flight
   * leases with heartbeat age and time left, the retry distribution and checkpoint counts.
   *
   * @param store the store
   * @param now the store's current instant ({@link QueueMonitor#now()}), so that ages are on the
   *     store's clock
   * @return the object
   */
  public static ObjectNode stats(TetherStore store, Instant now) {
    QueueMonitor monitor = new QueueMonitor(store);
    ObjectNode o = Json.MAPPER.createObjectNode();
    long p = 0;
    long ip = 0;
    long c = 0;
    long f = 0;
    long x = 0;
    ObjectNode queues = Json.MAPPER.createObjectNode();
    for (QueueTotals q : QueueTotals.of(monitor)) {
      ObjectNode n = queues.putObject(q.queue());
      n.put("pending", q.pending());
      n.put("in_progress", q.inProgress());
      n.put("completed", q.completed());
      n.put("failed", q.failed());
      n.put("cancelled", q.cancelled());
      p += q.pending();
      ip += q.inProgress();
      c += q.completed();
      f += q.failed();
      x += q.cancelled();
    }
    o.put("pending", p);
    o.put("in_progress", ip);
    o.put("completed", c);
    o.put("failed", f);
    o.put("cancelled", x);
    o.set("queues", queues);
    o.set("in_flight", inFlight(monitor.items(ItemQuery.inProgress(500)), now));
    ObjectNode retries = o.putObject("deliveries_per_finished_item");
    for (Map.Entry<Integer, Long> e : monitor.retryDistribution(null).entrySet()) {
      retries.put(Integer.toString(e.getKey()), e.getValue());
    }
    ObjectNode cps = o.putObject("checkpoints");
    monitor.countsByCheckpointKind().forEach(cps::put);
    o.put("generated_at", now.toString());
    return o;
  }

  /**
   * In-flight rows as JSON with {@code heartbeat_age_ms} and {@code lease_left_ms}.
   *
   * @param rows the in-progress items
   * @param now the current instant
   * @return the array
   */
  public static ArrayNode inFlight(List<WorkItem> rows, Instant now) {
    ArrayNode a = Json.MAPPER.createArrayNode();
    for (WorkItem r : rows) {
      ObjectNode n = a.addObject();
      n.put("id", r.id());
      n.put("queue", r.queue());
      n.put("holder", r.leaseHolder());
      n.put("delivery_count", r.deliveryCount());
      n.put("attempts", r.attempts());
      n.put("max_attempts", r.maxAttempts());
      n.put("heartbeat_age_ms", age(r.heartbeatAt(), now));
      boolean current = r.outputDelivery() != null && r.outputDelivery() == r.deliveryCount();
      n.put("output_age_ms", current ? age(r.outputAt(), now) : null);
      if (r.leaseExpiresAt() != null) {
        n.put("lease_left_ms", Duration.between(now, r.leaseExpiresAt()).toMillis());
      } else {
        n.putNull("lease_left_ms");
      }
      n.put("command", commandOf(inputOf(r)));
    }
    return a;
  }

  /**
   * Returns an item's input as text (lenient UTF-8), or null.
   *
   * @param w the item
   * @return the text, or null when the item has no input
   */
  public static String inputOf(WorkItem w) {
    return w.input() == null ? null : TailBuffer.decode(w.input());
  }

  private static String str(Instant i) {
    return i == null ? null : i.toString();
  }
}
