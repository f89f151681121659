-- Baton fleet schema for PostgreSQL, version 19: the files a run keeps (`artifacts: { keep: "100MiB" }`),
-- in the one store every host reads, so that any host serves any run's files. Forward only.
--
-- As in the SQLite history's version 13: when an attempt of an action with `artifacts` ends, the
-- host that ran it writes the regular files it left in `$BATON_ARTIFACTS` here. Their rows are
-- written unpublished (`kept = false`, with the writing incarnation) and their bytes as chunks of
-- up to 1 MiB, one autocommitted statement each, on the host's keeper connection (never the
-- loop's, never the writer's transaction); then one transaction publishes them (`kept = true`,
-- with the notices, replacing an earlier attempt's) only if the run is still that incarnation's
-- and in flight (its row held `FOR SHARE`, so a takeover waits for it or refuses it). Only
-- published rows are read: a crash leaves all of an attempt's files or none. Unpublished rows of
-- an incarnation that is gone (`hosts.gone_at`, set by a takeover or by its own clean stop: a
-- publication checks it under the run's row lock, so it publishes nothing once marked) are
-- removed by any host's keeper, at its start and before each keep.
-- `name` is the file's path under the directory; `type` a media type from its extension.
-- Rows go with their run (retention, `baton prune`): ON DELETE CASCADE.
-- Self-contained: it reads or changes no other table, so it may be renumbered at a merge.

CREATE TABLE artifacts (
    id          BIGSERIAL PRIMARY KEY,
    run_id      BIGINT  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    attempt     INTEGER NOT NULL,
    name        TEXT    NOT NULL,
    size        BIGINT  NOT NULL,
    sha256      TEXT    NOT NULL,                 -- lowercase hex
    type        TEXT    NOT NULL,                 -- a media type, from the name's extension
    at          BIGINT  NOT NULL,                 -- when it was kept (µs)
    kept        BOOLEAN NOT NULL DEFAULT false,   -- true once published; false while being written
    incarnation TEXT    NOT NULL                  -- the batond start that wrote it
);

-- A run's published files, one per name (an unpublished attempt may write the same names meanwhile).
CREATE UNIQUE INDEX artifacts_kept ON artifacts (run_id, name) WHERE kept;
-- A run's rows (reads, publication, the cascade of its removal).
CREATE INDEX artifacts_run ON artifacts (run_id, attempt);
-- The rows being written, by writer: few at any time, found without a scan.
CREATE INDEX artifacts_unpublished ON artifacts (incarnation) WHERE NOT kept;

CREATE TABLE artifact_chunks (
    artifact_id BIGINT NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    start       BIGINT NOT NULL,                  -- position of the chunk's first byte in the file
    bytes       BYTEA  NOT NULL,
    PRIMARY KEY (artifact_id, start)
);

-- What was not kept, and why: over the bound, a symlink or a device not followed, a failure.
CREATE TABLE artifact_notices (
    run_id  BIGINT  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    attempt INTEGER NOT NULL,
    seq     INTEGER NOT NULL,
    text    TEXT    NOT NULL,
    PRIMARY KEY (run_id, attempt, seq)
);
