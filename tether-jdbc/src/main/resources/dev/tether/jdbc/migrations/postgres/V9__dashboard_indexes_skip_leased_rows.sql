-- The dashboard's indexes hold no in-progress rows: a status change writes a new entry into every
-- index over the row whose condition the new row meets, so with these indexes over every row each
-- acquisition wrote two entries into them that the completion soon made dead. In-progress items
-- are counted and listed from the leased indexes instead (they hold as many rows as leases are
-- held). The migration reads the table once per index to build it; meanwhile the items table is
-- locked (PostgreSQL: reads too, as DROP INDEX takes an exclusive lock).
DROP INDEX tether_work_items_status_id;
CREATE INDEX tether_work_items_status_id ON tether_work_items (status, id)
  WHERE status <> 'in_progress';
DROP INDEX tether_work_items_queue_status_id;
CREATE INDEX tether_work_items_queue_status_id ON tether_work_items (queue, status, id)
  WHERE status <> 'in_progress';
