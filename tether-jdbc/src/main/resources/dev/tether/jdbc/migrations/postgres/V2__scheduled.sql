-- Pending items that are not due yet (a delay at enqueue, a retry backoff, a hand-back delay) are
-- flagged and kept out of the index the acquisitions scan, so that a pick never steps over them:
-- before, every pick read (in priority, id order) each not-yet-due pending item ahead of the first
-- due one. An acquisition promotes the queue's due flagged items (an index range probe on
-- work_items_scheduled) before it picks. The flag is only a hint for that index: a pick still
-- checks available_at, and a flagged item is promoted once it is due, whatever wrote it.
ALTER TABLE work_items ADD COLUMN scheduled BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE work_items SET scheduled = TRUE WHERE status = 'pending' AND available_at > clock_timestamp();
DROP INDEX work_items_pending;
CREATE INDEX work_items_pending ON work_items (queue, priority DESC, id) WHERE status = 'pending' AND scheduled = FALSE;
CREATE INDEX work_items_scheduled ON work_items (queue, available_at) WHERE status = 'pending' AND scheduled = TRUE;
