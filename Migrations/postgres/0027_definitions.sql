-- Baton fleet schema for PostgreSQL, version 27: the definition each run was triggered with. Forward only.
--
-- A run's row keeps the fingerprint of the action it was made with (`runs.definition`,
-- `Action.fingerprint`); this table keeps that action itself, as canonical JSON (`ActionCodec`,
-- version 1), by its name and fingerprint (the fingerprint leaves out the name: two actions
-- defined alike under two names have one fingerprint, not one definition), written by the host
-- that makes the first run of a name and fingerprint, in the transaction that inserts that run
-- (INSERT ... ON CONFLICT DO NOTHING: a definition's text never changes).
-- Whichever host starts the run, or decides its approval, does so by this definition, not by its
-- own config of the moment (a reload, another host's config). Rows are few (one per definition
-- ever triggered) and small, and are kept: no retention deletes them, since a host skips the
-- insert for a fingerprint it wrote since it started, and a row deleted under it would leave its
-- next runs with none. Runs made before this version have no row: they start by the config.
CREATE TABLE definitions (
    name TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    action TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (fingerprint, name)
);
