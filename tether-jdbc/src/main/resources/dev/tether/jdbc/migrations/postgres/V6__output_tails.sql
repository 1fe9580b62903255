-- Output tails: what a delivery printed last, kept so that a hung or killed delivery still shows
-- where it stopped. The item row holds the latest tails of its current (or last) delivery, as
-- of its last renewal that carried output (output_delivery names that delivery; output_at is
-- the store's instant of the last output); every checkpoint that ends a delivery (expired,
-- failed, handed back, cancelled, dead-lettered) copies them, so each delivery keeps its own.
ALTER TABLE tether_work_items ADD COLUMN stdout_tail TEXT;
ALTER TABLE tether_work_items ADD COLUMN stderr_tail TEXT;
ALTER TABLE tether_work_items ADD COLUMN output_at TIMESTAMPTZ;
ALTER TABLE tether_work_items ADD COLUMN output_delivery INTEGER;
ALTER TABLE tether_work_item_checkpoints ADD COLUMN stdout_tail TEXT;
ALTER TABLE tether_work_item_checkpoints ADD COLUMN stderr_tail TEXT;
