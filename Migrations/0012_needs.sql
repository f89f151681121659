-- Baton history schema, version 12: runs that need other runs. Forward only, like 0001.
--
-- An action with `needs: ["build-a", "build-b"]` makes each of its runs trigger the actions it
-- needs (under `join`) and wait for their runs: one row per needed run, in the action's order.
-- A restart finds a waiting run still waiting on the same runs (or decides it from how they
-- ended); `baton show` lists the runs a run needs and the runs that need it.
CREATE TABLE IF NOT EXISTS run_needs (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    action TEXT NOT NULL,
    needed_run_id INTEGER NOT NULL,
    PRIMARY KEY (run_id, position)
);
CREATE INDEX IF NOT EXISTS run_needs_by_needed ON run_needs (needed_run_id);
