-- Baton fleet schema for PostgreSQL, version 16: a key's line of follow-ups. Forward only.
--
-- `queue: { depth: N }` lets up to N follow-ups of a key wait, first in first out, each its own
-- run. `line` holds them in the order they start (the first takes the key when its holder ends);
-- `follow_up` stays, written as the line's first entry, for the readers that only ask which run
-- is next. A key's one follow-up from before this version becomes a line of one.
ALTER TABLE keys ADD COLUMN line BIGINT[] NOT NULL DEFAULT '{}';
UPDATE keys SET line = ARRAY[follow_up] WHERE follow_up IS NOT NULL;
