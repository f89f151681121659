-- Baton history schema, version 1. Forward only: never edit this file once landed;
-- add Migrations/0002_….sql instead. Documented in docs/schema.md.
-- Times are integers: microseconds since the Unix epoch (UTC).

-- One row per run: its current phase and the facts of its outcome.
CREATE TABLE runs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    action      TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    phase       TEXT    NOT NULL CHECK (phase IN ('queued', 'loading', 'retrying', 'success', 'failure', 'cancelled')),
    policy      TEXT    NOT NULL,
    params      TEXT    NOT NULL DEFAULT '{}',   -- JSON object of the trigger's params
    trigger_uid INTEGER,                         -- SO_PEERCRED of the trigger that created the run
    trigger_gid INTEGER,
    trigger_pid INTEGER,
    queued_at   INTEGER NOT NULL,
    started_at  INTEGER,                         -- first time the run went loading
    ended_at    INTEGER,                         -- time it reached success, failure or cancelled
    attempts    INTEGER NOT NULL DEFAULT 0,
    exit_code   INTEGER,
    signal      INTEGER,
    reason      TEXT,                            -- exit, timeout, cancelled, replaced, interrupted, shutdown, …
    error       TEXT,
    pgid        INTEGER,                         -- process group of the current attempt
    pgid_start  TEXT,                            -- boot id and start time of that group's leader
    progress    TEXT
);

CREATE INDEX runs_by_action ON runs (action, id);
CREATE INDEX runs_by_phase ON runs (phase, id);
CREATE INDEX runs_by_queued_at ON runs (queued_at);
CREATE INDEX runs_by_action_outcome ON runs (action, phase, ended_at);

-- One row per phase change. seq counts from 1 for each run without gaps.
CREATE TABLE transitions (
    run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    from_phase TEXT,
    to_phase   TEXT    NOT NULL,
    at         INTEGER NOT NULL,
    detail     TEXT    NOT NULL DEFAULT '{}',    -- JSON: reason, error, exit, signal, by, attempt, …
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

CREATE INDEX transitions_by_time ON transitions (at);

-- Triggers that did not create a run: joined, coalesced into a follow-up, rejected as busy.
CREATE TABLE triggers (
    id       INTEGER PRIMARY KEY,
    run_id   INTEGER REFERENCES runs (id) ON DELETE CASCADE,
    action   TEXT    NOT NULL,
    key      TEXT    NOT NULL,
    decision TEXT    NOT NULL,
    policy   TEXT    NOT NULL,
    uid      INTEGER,
    gid      INTEGER,
    pid      INTEGER,
    at       INTEGER NOT NULL,
    params   TEXT    NOT NULL DEFAULT '{}'
);

CREATE INDEX triggers_by_run ON triggers (run_id);

-- The captured tail of a run's stdout and stderr, kept apart so history scans stay small.
CREATE TABLE outputs (
    run_id    INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    tail      BLOB    NOT NULL,
    truncated INTEGER NOT NULL DEFAULT 0         -- 1 when earlier output was dropped
);
