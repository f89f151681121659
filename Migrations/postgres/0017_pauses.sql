-- Baton fleet schema for PostgreSQL, version 17: paused actions, fleet-wide. Forward only.
--
-- As in the SQLite history (0011_pauses): `baton pause ACTION` on any host (or an action's
-- `pauseAfterFailures`, counted over every host's runs) makes the action refuse its triggers on
-- every host until `baton resume` or the pause's end. `pauses` holds each action paused now
-- (every host's trigger batches and starts read it in their transactions); `pause_events` keeps
-- every pause and resume, in order, for `baton history --events` (one row per pause or resume:
-- a writer's transaction sent again after a lost connection adds none); `pause_streaks` counts
-- each action's failures in a row over every host's runs (`pauseAfterFailures`), moved by every
-- success and failure of the action under its pause lock. Times are microseconds since the
-- epoch, as everywhere in this schema; a pause's `at` and `until` by the database's clock.
CREATE TABLE pauses (
    action TEXT PRIMARY KEY,
    paused_by TEXT NOT NULL,
    reason TEXT NOT NULL,
    at BIGINT NOT NULL,
    until BIGINT
);
CREATE TABLE pause_events (
    id BIGSERIAL PRIMARY KEY,
    action TEXT NOT NULL,
    event TEXT NOT NULL CHECK (event IN ('paused', 'resumed')),
    by_whom TEXT NOT NULL,
    reason TEXT,
    at BIGINT NOT NULL,
    until BIGINT,
    host TEXT NOT NULL,
    UNIQUE (action, event, at, host)
);
CREATE INDEX pause_events_by_action ON pause_events (action, at);
CREATE TABLE pause_streaks (
    action TEXT PRIMARY KEY,
    failures INTEGER NOT NULL
);
