-- Baton history schema, version 11: paused actions. Forward only, like 0001.
--
-- `baton pause ACTION [--for 2h] --reason "…"` (or an action's `pauseAfterFailures`) makes the
-- action refuse its triggers until `baton resume` or the pause's end. `pauses` holds each action
-- paused now (a restart finds it; one whose `until` has passed no longer holds); `pause_events`
-- keeps every pause and resume, in order, for the history.
CREATE TABLE IF NOT EXISTS pauses (
    action TEXT PRIMARY KEY,
    paused_by TEXT NOT NULL,
    reason TEXT NOT NULL,
    at INTEGER NOT NULL,
    until INTEGER
);
CREATE TABLE IF NOT EXISTS pause_events (
    id INTEGER PRIMARY KEY,
    action TEXT NOT NULL,
    event TEXT NOT NULL CHECK (event IN ('paused', 'resumed')),
    by_whom TEXT NOT NULL,
    reason TEXT,
    at INTEGER NOT NULL,
    until INTEGER
);
CREATE INDEX IF NOT EXISTS pause_events_by_action ON pause_events (action, at);
