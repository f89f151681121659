-- Baton fleet schema for PostgreSQL, version 3: the fingerprint of each action's definition.
-- Forward only.
--
-- Two hosts whose configs give one action name different commands used to share each other's
-- runs: a join on web-2 told its caller that web-1's other command was its own. Each run now
-- records the fingerprint of the definition it was created with (`Action.fingerprint`: FNV-1a
-- 64 of the normalised definition, 16 hex digits), a join or coalesce from a host whose
-- fingerprint differs is refused, and each incarnation records its actions' fingerprints so that
-- a joining host and `batond --check-config` can say which actions differ from which host's.
-- Runs from before this version have none and are shared as before.

ALTER TABLE runs ADD COLUMN definition TEXT;
ALTER TABLE hosts ADD COLUMN actions TEXT NOT NULL DEFAULT '{}';   -- {"name": "fingerprint", …}
