-- Baton fleet schema for PostgreSQL, version 24: `baton search` across the fleet's output. Forward only.
--
-- The `pg_trgm` extension, for the search index a host's config may ask for (`search: "index"`:
-- FleetSearch.makeIndex makes it at that host's start, `CREATE INDEX CONCURRENTLY`): a GIN index
-- of trigrams over each chunk as text, `encode(bytes, 'escape')`. The index is not made here: it
-- makes every output write dearer, and a fleet without it searches by reading its newest output,
-- bounded, as one host's `search: "scan"` does.
--
-- `pg_trgm` ships with PostgreSQL (Debian: in the postgresql package; elsewhere
-- postgresql-contrib) and is a trusted extension, so the database's owner may create it. Where it
-- is not installed (undefined_file), or may not be created (insufficient_privilege,
-- feature_not_supported), the migration goes on without it, saying so; any other failure fails
-- the migration. The setting `baton.test_without_pg_trgm` (tests only) plays a server without it.
DO $$
BEGIN
    IF current_setting('baton.test_without_pg_trgm', true) = 'on' THEN
        RAISE EXCEPTION 'extension "pg_trgm" is not available (withheld for a test)' USING ERRCODE = 'undefined_file';
    END IF;
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN undefined_file OR insufficient_privilege OR feature_not_supported THEN
    RAISE NOTICE 'pg_trgm not created (%): a search reads the newest output; search: "index" cannot make its index', SQLERRM;
END $$;
