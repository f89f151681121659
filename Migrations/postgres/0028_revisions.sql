-- Baton fleet schema for PostgreSQL, version 28: a run's whole definition, not only its fingerprint. Forward only.
--
-- Version 27 stored the action a run was triggered with by its fingerprint (`definitions`), and
-- the fingerprint covers what an action runs and how its triggers meet, not its hooks, locks,
-- limits, output or failure count: where a run's fingerprint was the config's of the moment, a
-- reload that changed only those changed its queued runs (one machine's runs keep their own), and
-- two hosts whose configs differed only there shared one row, the first writer's (review of
-- fleetdefs14, M4). Each run now also keeps its revision (`runs.revision`: SHA-256 of the
-- canonical text `ActionCodec` writes, env values as digests, 32 hex digits), and this table
-- keeps that text by name and revision, written by the host that makes the first run of it, in
-- that run's transaction (INSERT ... ON CONFLICT DO NOTHING: the text of a revision never
-- changes). The fingerprint stays what hosts compare to share a key's runs. Rows are kept, as
-- `definitions` are. Runs made before this version have no revision: they are decided by their
-- fingerprint's row, as before.
ALTER TABLE runs ADD COLUMN revision TEXT;
CREATE TABLE revisions (
    name TEXT NOT NULL,
    revision TEXT NOT NULL,
    action TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (revision, name)
);
