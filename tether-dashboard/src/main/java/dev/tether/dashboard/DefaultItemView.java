package dev.tether.dashboard;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tether.jdbc.Checkpoint;
import dev.tether.jdbc.Delivery;
import dev.tether.jdbc.WorkItem;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;

/**
 * The item view of a dashboard that was given none: the input and output as text (invalid UTF-8
 * shown as U+FFFD), the fields, the checkpoints, and each delivery with the output tails it ended
 * with. Stateless.
 */
final class DefaultItemView implements TetherDashboard.ItemView {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Override
  public String summary(WorkItem item) {
    return item.input() == null ? "" : new String(item.input(), StandardCharsets.UTF_8);
  }

  @Override
  public ObjectNode detail(WorkItem w, Instant now) {
    ObjectNode o = JSON.createObjectNode();
    o.put("id", w.id());
    o.put("queue", w.queue());
    o.put("status", w.status().dbValue());
    o.put("priority", w.priority());
    o.put("delivery_count", w.deliveryCount());
    o.put("attempts", w.attempts());
    o.put("max_attempts", w.maxAttempts());
    o.put("lease_holder", w.leaseHolder());
    o.put("lease_expires_at", TetherDashboard.str(w.leaseExpiresAt()));
    o.put("heartbeat_at", TetherDashboard.str(w.heartbeatAt()));
    o.put("available_at", TetherDashboard.str(w.availableAt()));
    o.put("checkpoint", w.progress() == null ? null : new String(w.progress(), StandardCharsets.UTF_8));
    o.put("checkpoint_at", TetherDashboard.str(w.progressAt()));
    o.put("checkpoint_delivery", w.progressDelivery());
    o.put("created_at", TetherDashboard.str(w.createdAt()));
    o.put("completed_at", TetherDashboard.str(w.completedAt()));
    o.put("error", w.errorMessage());
    o.put("command", summary(w));
    o.put("output_data", w.output() == null ? null : new String(w.output(), StandardCharsets.UTF_8));
    o.putNull("result");
    ArrayNode cps = o.putArray("checkpoints");
    for (Checkpoint c : w.checkpoints()) {
      ObjectNode n = cps.addObject();
      n.put("kind", c.kind());
      n.put("delivery", c.deliveryCount());
      n.put("lease_holder", c.leaseHolder());
      n.put("reason", c.reason());
      n.put("at", TetherDashboard.str(c.createdAt()));
    }
    boolean current = w.outputDelivery() != null && w.outputDelivery() == w.deliveryCount();
    ObjectNode live = o.putObject("output");
    live.put("delivery", w.deliveryCount());
    live.put("stdout_tail", current ? w.stdoutTail() : null);
    live.put("stderr_tail", current ? w.stderrTail() : null);
    live.put("output_age_ms", current && w.outputAt() != null
        ? Math.max(0, Duration.between(w.outputAt(), now).toMillis()) : null);
    live.put("finished", w.status().isFinished());
    ArrayNode deliveries = o.putArray("deliveries");
    for (Delivery d : w.deliveries()) {
      ObjectNode a = deliveries.addObject();
      a.put("delivery", d.number());
      a.put("outcome", d.outcome());
      if (!d.isUnknown()) {
        a.put("holder", d.holder());
        a.put("reason", d.reason());
        a.put("at", TetherDashboard.str(d.at()));
        a.put("stdout_tail", d.stdoutTail());
        a.put("stderr_tail", d.stderrTail());
      }
    }
    return o;
  }
}
