CREATE TABLE work_items (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue TEXT NOT NULL,
  task_id TEXT,
  work_type TEXT,
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'in_progress', 'completed', 'failed')),
  priority INTEGER NOT NULL DEFAULT 0,
  lease_holder TEXT,
  lease_token BIGINT,
  lease_acquired_at TIMESTAMPTZ,
  lease_expires_at TIMESTAMPTZ,
  heartbeat_at TIMESTAMPTZ,
  delivery_count INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL CHECK (max_attempts >= 1),
  available_at TIMESTAMPTZ NOT NULL,
  idempotency_key TEXT,
  reply_to TEXT,
  input_data BYTEA,
  output_data BYTEA,
  error_message TEXT,
  created_at TIMESTAMPTZ NOT NULL,
  started_at TIMESTAMPTZ,
  completed_at TIMESTAMPTZ,
  updated_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX work_items_idempotency_key ON work_items (queue, idempotency_key);
CREATE INDEX work_items_pending ON work_items (queue, priority DESC, id) WHERE status = 'pending';
CREATE INDEX work_items_leased ON work_items (lease_expires_at) WHERE status = 'in_progress';
CREATE INDEX work_items_leased_by_queue ON work_items (queue, lease_expires_at) WHERE status = 'in_progress';
CREATE INDEX work_items_finished ON work_items (completed_at) WHERE status IN ('completed', 'failed');
CREATE TABLE work_item_checkpoints (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  item_id BIGINT NOT NULL REFERENCES work_items (id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  lease_holder TEXT,
  lease_token BIGINT,
  delivery_count INTEGER NOT NULL,
  heartbeat_at TIMESTAMPTZ,
  reason TEXT,
  created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX work_item_checkpoints_item ON work_item_checkpoints (item_id, id);
CREATE INDEX work_item_checkpoints_created ON work_item_checkpoints (created_at);
