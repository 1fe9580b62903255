-- Tether's tables carry a tether_ prefix, so that an application database that already has a
-- work_items table is never touched; indexes and constraints follow.
ALTER TABLE work_items RENAME TO tether_work_items;
ALTER TABLE work_item_checkpoints RENAME TO tether_work_item_checkpoints;
ALTER INDEX work_items_idempotency_key RENAME TO tether_work_items_idempotency_key;
ALTER INDEX work_items_pending RENAME TO tether_work_items_pending;
ALTER INDEX work_items_scheduled RENAME TO tether_work_items_scheduled;
ALTER INDEX work_items_leased RENAME TO tether_work_items_leased;
ALTER INDEX work_items_leased_by_queue RENAME TO tether_work_items_leased_by_queue;
ALTER INDEX work_items_finished RENAME TO tether_work_items_finished;
ALTER INDEX work_item_checkpoints_item RENAME TO tether_work_item_checkpoints_item;
ALTER INDEX work_item_checkpoints_created RENAME TO tether_work_item_checkpoints_created;
ALTER INDEX work_items_pkey RENAME TO tether_work_items_pkey;
ALTER INDEX work_item_checkpoints_pkey RENAME TO tether_work_item_checkpoints_pkey;
ALTER SEQUENCE work_items_id_seq RENAME TO tether_work_items_id_seq;
ALTER SEQUENCE work_item_checkpoints_id_seq RENAME TO tether_work_item_checkpoints_id_seq;
ALTER TABLE tether_work_items RENAME CONSTRAINT work_items_max_attempts_check TO tether_work_items_max_attempts_check;
ALTER TABLE tether_work_item_checkpoints RENAME CONSTRAINT work_item_checkpoints_item_id_fkey TO tether_work_item_checkpoints_item_id_fkey;
-- One budget: delivery_count counts every delivery; attempts counts the charged ones (a worker's
-- own hand-back is refunded), and max_attempts limits attempts. Unfinished items keep the budget
-- they had spent: every earlier delivery was charged.
ALTER TABLE tether_work_items ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
UPDATE tether_work_items SET attempts = LEAST(delivery_count, max_attempts)
  WHERE status IN ('pending', 'in_progress', 'failed');
-- Cancellation is a status of its own.
ALTER TABLE tether_work_items DROP CONSTRAINT work_items_status_check;
ALTER TABLE tether_work_items ADD CONSTRAINT tether_work_items_status_check
  CHECK (status IN ('pending', 'in_progress', 'completed', 'failed', 'cancelled'));
DROP INDEX tether_work_items_finished;
CREATE INDEX tether_work_items_finished ON tether_work_items (completed_at)
  WHERE status IN ('completed', 'failed', 'cancelled');
-- The latest progress checkpoint, fenced by the lease token that wrote it; handed to the next
-- delivery.
ALTER TABLE tether_work_items ADD COLUMN progress BYTEA;
ALTER TABLE tether_work_items ADD COLUMN progress_at TIMESTAMPTZ;
ALTER TABLE tether_work_items ADD COLUMN progress_delivery INTEGER;
-- A reply names the request it answers; an error reply says the request ended without an output.
ALTER TABLE tether_work_items ADD COLUMN reply_of BIGINT;
ALTER TABLE tether_work_items ADD COLUMN reply_error BOOLEAN NOT NULL DEFAULT FALSE;
