-- Long jobs: beat_at is the last beat the lease's own work recorded in the store through its
-- lease token (a progress checkpoint, or a beat from a process the holder delegated the work to),
-- as opposed to heartbeat_at, which every extension also moves. The holder reads it to learn that
-- work it cannot see is progressing, and extends the lease for it.
ALTER TABLE tether_work_items ADD COLUMN beat_at TIMESTAMPTZ;
