-- Baton fleet schema for PostgreSQL, version 26: a run's origin, kept with the run. Forward only.
--
-- The uid whose trigger made a run, followed back through the hooks and needs that made it (who
-- may not approve it unless `self: true`), is decided once as the run is made, by the engine's
-- rule (`ConductorState.origin(kept:trigger:)`), as one machine keeps it (SQLite's
-- 0015_hold_origin): a trigger's uid, or the origin of the run whose hook or need made it, read
-- from that one row. Before this version an approval row's origin was found by walking up the
-- chain when the wait was written, and the walk through hooks alone missed a hook's needed run
-- (a hook, its needs, then their hook with `approve`: the person behind it could approve it).
--
-- Rows of runs still unfinished get the origin the old walk found (their approval's, else their
-- trigger's uid, else the first found up the hooks that fired them and the runs that need them),
-- so that a run they make after the upgrade inherits it; finished rows keep NULL (nothing makes
-- a run from them now).
ALTER TABLE runs ADD COLUMN origin_uid BIGINT;

WITH RECURSIVE chain (start, id, depth) AS (
    SELECT r.id, r.id, 0 FROM runs r WHERE r.phase IN ('queued', 'loading', 'retrying')
    UNION ALL
    SELECT c.start, up.id, c.depth + 1 FROM chain c JOIN runs r ON r.id = c.id
    CROSS JOIN LATERAL (SELECT r.hook_run AS id WHERE r.hook_run IS NOT NULL
                        UNION ALL SELECT n.run_id FROM run_needs n WHERE n.needed_run = r.id) up
    WHERE c.depth < 32
), found AS (
    SELECT DISTINCT ON (c.start) c.start, coalesce(a.origin_uid, r.trigger_uid) AS origin
    FROM chain c JOIN runs r ON r.id = c.id LEFT JOIN approvals a ON a.run_id = c.id
    WHERE coalesce(a.origin_uid, r.trigger_uid) IS NOT NULL
    ORDER BY c.start, c.depth, c.id
)
UPDATE runs SET origin_uid = found.origin FROM found WHERE runs.id = found.start;
