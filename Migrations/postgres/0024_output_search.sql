-- Baton fleet schema for PostgreSQL, version 24: `baton search` across the fleet's output. Forward only.
--
-- As the SQLite history's trigram index (its version 11), over the fleet's kept output: a GIN
-- index of `pg_trgm` trigrams on each chunk's bytes as text, `encode(bytes, 'escape')` (never
-- fails on bytes that are not UTF-8: a zero or high byte becomes `\nnn`, a backslash `\\`), which
-- a search asks with `ILIKE` (case ignored, as the SQLite index folds ASCII), the index narrowing
-- the chunks and the server checking each one named. The index goes with its rows: a run's
-- chunks removed by retention leave it with them.
--
-- `pg_trgm` ships with PostgreSQL (Debian: in postgresql-15; elsewhere postgresql-contrib) and
-- is a trusted extension, so the database's owner may create it. Where it cannot be created (not
-- installed, or no right to), the migration goes on without the index: batond starts, and a
-- search is refused naming pg_trgm and how to add it (FleetSearch.missing). The setting
-- `baton.test_without_pg_trgm` (tests only) plays that server.
DO $$
BEGIN
    IF current_setting('baton.test_without_pg_trgm', true) = 'on' THEN
        RAISE EXCEPTION 'pg_trgm withheld for a test';
    END IF;
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
    CREATE INDEX output_chunks_search ON output_chunks USING gin (encode(bytes, 'escape') gin_trgm_ops);
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'fleet search not indexed (%): baton search is refused until pg_trgm is added', SQLERRM;
END $$;
