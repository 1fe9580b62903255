-- The fleet: one row per worker process on this store, kept fresh by the process itself (one
-- small UPDATE per refresh interval). Readers show a row whose last_seen_at is older than a few
-- refresh intervals (on the store's clock) as gone; workers delete rows long gone.
CREATE TABLE tether_workers (
  worker_id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  pid BIGINT NOT NULL,
  version TEXT NOT NULL,
  queues TEXT NOT NULL,
  loops INTEGER NOT NULL,
  concurrency INTEGER NOT NULL,
  in_flight INTEGER NOT NULL DEFAULT 0,
  refresh_millis BIGINT NOT NULL,
  started_at TIMESTAMPTZ NOT NULL,
  last_seen_at TIMESTAMPTZ NOT NULL
);
-- The dashboard pages items newest first (keyset on id) by status, and by queue and status, and
-- counts them up to a cap: these indexes bound that work by what a page shows.
CREATE INDEX tether_work_items_status_id ON tether_work_items (status, id);
CREATE INDEX tether_work_items_queue_status_id ON tether_work_items (queue, status, id);
