-- Baton fleet schema for PostgreSQL, version 9: the feed follows commits, not a global lock. Forward only.
--
-- Until version 8 every fleet write took one advisory lock so that transition ids committed in
-- order and a host's feed could read "ids after the last seen". Now writers to different keys
-- never wait for each other, so ids may commit out of order (a long transaction takes its id
-- early and commits late). Each transition carries the writing transaction's id (`xid`, 64-bit:
-- it never wraps); a feed remembers the snapshot it last read (`xmax` and the transactions then
-- in progress) and next reads exactly the rows of the transactions that snapshot could not see
-- and its own can: `xid >= xmax OR xid = ANY (in progress)`, in id order (see FleetFeed+Tick.swift).
-- The rows written before this version get the migrating transaction's id: committed, so seen.
-- A batond of version 8 or older must not run against this schema (it would take the lock alone
-- and read by id): it refuses a database newer than it knows, and a fleet upgrades every host.
ALTER TABLE transitions ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX transitions_by_xid ON transitions (xid);
