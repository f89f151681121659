-- Baton fleet schema for PostgreSQL, version 1. Forward only, like the SQLite migrations:
-- add Migrations/postgres/0002_….sql instead of editing this file once landed.
-- Run times are bigints, microseconds since the Unix epoch (as in SQLite); leases use the
-- database's own clock (now()), never a host's.

-- One row per batond process start (an incarnation); a host name has one live incarnation.
CREATE TABLE hosts (
    incarnation TEXT        PRIMARY KEY,          -- name/pid/random: unique per process start
    name        TEXT        NOT NULL,
    pid         INTEGER     NOT NULL,
    started_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    renewed_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    lease_ms    BIGINT      NOT NULL CHECK (lease_ms > 0),
    gone_at     TIMESTAMPTZ,                      -- set when it stopped cleanly or lost its lease
    gone_reason TEXT
);

CREATE INDEX hosts_live ON hosts (renewed_at) WHERE gone_at IS NULL;

CREATE TABLE runs (
    id          BIGSERIAL PRIMARY KEY,
    action      TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    phase       TEXT    NOT NULL CHECK (phase IN ('queued', 'loading', 'retrying', 'success', 'failure', 'cancelled')),
    policy      TEXT    NOT NULL,
    params      TEXT    NOT NULL DEFAULT '{}',
    trigger_uid BIGINT,
    trigger_gid BIGINT,
    trigger_pid BIGINT,
    queued_at   BIGINT  NOT NULL,
    started_at  BIGINT,
    ended_at    BIGINT,
    attempts    INTEGER NOT NULL DEFAULT 0,
    exit_code   INTEGER,
    signal      INTEGER,
    reason      TEXT,
    error       TEXT,
    pgid        INTEGER,
    pgid_start  TEXT,
    progress    TEXT,
    host        TEXT    NOT NULL,                 -- the host that runs it
    incarnation TEXT    NOT NULL,                 -- the process that owns it: only it writes its phases
    stop        TEXT,                             -- a stop asked by another host: 'cancelled <uid>' or 'replaced <run>'
    last_seq    INTEGER NOT NULL DEFAULT 1
);

-- The invariant itself: one run loading or retrying per key, whatever any host believes.
CREATE UNIQUE INDEX runs_one_active_per_key ON runs (key) WHERE phase IN ('loading', 'retrying');
CREATE INDEX runs_by_action ON runs (action, id);
CREATE INDEX runs_by_phase ON runs (phase, id);
CREATE INDEX runs_unfinished ON runs (incarnation) WHERE phase IN ('queued', 'loading', 'retrying');
CREATE INDEX runs_by_action_outcome ON runs (action, phase, ended_at);

-- The single-flight slot of each key, locked FOR UPDATE by every decision about the key.
CREATE TABLE keys (
    key       TEXT     PRIMARY KEY,
    holder    BIGINT,                             -- the run triggers see as in flight
    follow_up BIGINT,                             -- the queued run behind it (policy queue)
    draining  BIGINT[] NOT NULL DEFAULT '{}'      -- replaced runs still stopping
);

-- Every phase change; id orders the fleet's feed (writers take one lock, so ids commit in order).
CREATE TABLE transitions (
    id         BIGSERIAL PRIMARY KEY,
    run_id     BIGINT  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    from_phase TEXT,
    to_phase   TEXT    NOT NULL,
    at         BIGINT  NOT NULL,
    detail     TEXT    NOT NULL DEFAULT '{}',
    UNIQUE (run_id, seq)
);

CREATE TABLE triggers (
    id       BIGSERIAL PRIMARY KEY,
    run_id   BIGINT REFERENCES runs (id) ON DELETE CASCADE,
    action   TEXT   NOT NULL,
    key      TEXT   NOT NULL,
    decision TEXT   NOT NULL,
    policy   TEXT   NOT NULL,
    uid      BIGINT,
    gid      BIGINT,
    pid      BIGINT,
    at       BIGINT NOT NULL,
    params   TEXT   NOT NULL DEFAULT '{}',
    host     TEXT
);

CREATE INDEX triggers_by_run ON triggers (run_id);
CREATE INDEX triggers_by_decision ON triggers (decision, id);

CREATE TABLE outputs (
    run_id    BIGINT  PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    tail      BYTEA   NOT NULL,
    truncated BOOLEAN NOT NULL DEFAULT false
);
