-- Only items enqueued with an idempotency key need its uniqueness, so the index holds their rows
-- alone: an item without a key (most items) adds no entry to it, neither when inserted nor on any
-- later write of its row (a status change writes a new entry into every index over the row). The
-- migration reads the table once to build the new index, holding off writes meanwhile.
DROP INDEX tether_work_items_idempotency_key;
CREATE UNIQUE INDEX tether_work_items_idempotency_key ON tether_work_items (queue, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
