-- Headers: small text attributes the sender stores with an item and every delivery reads back
-- (a trace context, so that the processing continues the enqueue's trace in another process).
-- Encoded as key=value pairs joined by '&', each part percent-encoded (UTF-8); NULL when none.
ALTER TABLE tether_work_items ADD COLUMN headers TEXT;
