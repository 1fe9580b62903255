-- Tether's tables carry a tether_ prefix, so that an application database that already has a
-- work_items table is never touched. SQLite cannot change a CHECK constraint in place, so the
-- tables are rebuilt: new tables, rows copied with their ids, old tables dropped, and the id
-- sequence carried over (AUTOINCREMENT never reuses an id, even of a purged item).
-- Columns added: attempts (the charged deliveries; max_attempts limits them; unfinished items
-- keep what they had spent, since every earlier delivery was charged), the 'cancelled' status,
-- the latest progress checkpoint (progress, progress_at, progress_delivery), and reply_of /
-- reply_error (a reply names its request; an error reply says the request ended without output).
-- Instants are epoch milliseconds.
CREATE TABLE tether_work_items (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  queue TEXT NOT NULL,
  task_id TEXT,
  work_type TEXT,
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'in_progress', 'completed', 'failed', 'cancelled')),
  priority INTEGER NOT NULL DEFAULT 0,
  lease_holder TEXT,
  lease_token INTEGER,
  lease_acquired_at INTEGER,
  lease_expires_at INTEGER,
  heartbeat_at INTEGER,
  delivery_count INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL CHECK (max_attempts >= 1),
  available_at INTEGER NOT NULL,
  idempotency_key TEXT,
  reply_to TEXT,
  input_data BLOB,
  output_data BLOB,
  error_message TEXT,
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  completed_at INTEGER,
  updated_at INTEGER NOT NULL,
  scheduled INTEGER NOT NULL DEFAULT FALSE,
  progress BLOB,
  progress_at INTEGER,
  progress_delivery INTEGER,
  reply_of INTEGER,
  reply_error INTEGER NOT NULL DEFAULT FALSE
);
INSERT INTO tether_work_items (id, queue, task_id, work_type, status, priority, lease_holder,
  lease_token, lease_acquired_at, lease_expires_at, heartbeat_at, delivery_count, attempts,
  max_attempts, available_at, idempotency_key, reply_to, input_data, output_data, error_message,
  created_at, started_at, completed_at, updated_at, scheduled)
  SELECT id, queue, task_id, work_type, status, priority, lease_holder, lease_token,
    lease_acquired_at, lease_expires_at, heartbeat_at, delivery_count,
    CASE WHEN status IN ('pending', 'in_progress', 'failed') THEN MIN(delivery_count, max_attempts) ELSE 0 END,
    max_attempts, available_at, idempotency_key, reply_to, input_data, output_data, error_message,
    created_at, started_at, completed_at, updated_at, scheduled
  FROM work_items;
CREATE TABLE tether_work_item_checkpoints (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  item_id INTEGER NOT NULL REFERENCES tether_work_items (id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  lease_holder TEXT,
  lease_token INTEGER,
  delivery_count INTEGER NOT NULL,
  heartbeat_at INTEGER,
  reason TEXT,
  created_at INTEGER NOT NULL
);
INSERT INTO tether_work_item_checkpoints (id, item_id, kind, lease_holder, lease_token,
  delivery_count, heartbeat_at, reason, created_at)
  SELECT id, item_id, kind, lease_holder, lease_token, delivery_count, heartbeat_at, reason, created_at
  FROM work_item_checkpoints;
DELETE FROM sqlite_sequence WHERE name IN ('tether_work_items', 'tether_work_item_checkpoints');
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'tether_work_items', seq FROM sqlite_sequence WHERE name = 'work_items';
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'tether_work_item_checkpoints', seq FROM sqlite_sequence WHERE name = 'work_item_checkpoints';
DROP TABLE work_item_checkpoints;
DROP TABLE work_items;
CREATE UNIQUE INDEX tether_work_items_idempotency_key ON tether_work_items (queue, idempotency_key);
CREATE INDEX tether_work_items_pending ON tether_work_items (queue, priority DESC, id) WHERE status = 'pending' AND scheduled = FALSE;
CREATE INDEX tether_work_items_scheduled ON tether_work_items (queue, available_at) WHERE status = 'pending' AND scheduled = TRUE;
CREATE INDEX tether_work_items_leased ON tether_work_items (lease_expires_at) WHERE status = 'in_progress';
CREATE INDEX tether_work_items_leased_by_queue ON tether_work_items (queue, lease_expires_at) WHERE status = 'in_progress';
CREATE INDEX tether_work_items_finished ON tether_work_items (completed_at) WHERE status IN ('completed', 'failed', 'cancelled');
CREATE INDEX tether_work_item_checkpoints_item ON tether_work_item_checkpoints (item_id, id);
CREATE INDEX tether_work_item_checkpoints_created ON tether_work_item_checkpoints (created_at);
