-- Baton fleet schema for PostgreSQL, version 5: where a run's trigger came from. Forward only.
--
-- As in the SQLite history's version 6: the run's row carries the `via` of the trigger that
-- created it ("webhook github-deploy from 203.0.113.7, delivery 72d3…"), NULL for a socket
-- trigger. A nullable column rewrites no row, so hosts still on version 4 keep working
-- meanwhile (the runs they create have none).
ALTER TABLE runs ADD COLUMN via TEXT;
