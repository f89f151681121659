-- Baton history schema, version 13: the files a run keeps (`artifacts: { keep: "100MiB" }`).
-- Forward only, like 0001.
--
-- When an attempt of an action with `artifacts` ends, the regular files it left in
-- `$BATON_ARTIFACTS` are kept here. Their rows are written `kept = 0` and their chunks a few at a
-- time (other commits go on between), then published in one transaction (`kept = 1`, with the
-- notices, replacing an earlier attempt's): only published rows are read, so a crash while they
-- are written leaves all of them or none; the rows it left unpublished are removed at the next
-- start. `name` is the file's path under the directory; `type` a media type from its extension.
-- The bytes are chunks of up to 1 MiB, so that a file is read back a chunk at a time.
-- Rows go with their run (retention, `baton prune`): ON DELETE CASCADE.
-- Self-contained: it reads or changes no other table, so it may be renumbered at a merge.

CREATE TABLE IF NOT EXISTS artifacts (
    id      INTEGER PRIMARY KEY,
    run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    attempt INTEGER NOT NULL,
    name    TEXT    NOT NULL,
    size    INTEGER NOT NULL,
    sha256  TEXT    NOT NULL,                     -- lowercase hex
    type    TEXT    NOT NULL,                     -- a media type, from the name's extension
    at      INTEGER NOT NULL,                     -- when it was kept (µs)
    kept    INTEGER NOT NULL DEFAULT 0,           -- 1 once published; 0 while being written
    UNIQUE (run_id, attempt, name)
);

CREATE TABLE IF NOT EXISTS artifact_chunks (
    artifact_id INTEGER NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    start       INTEGER NOT NULL,                 -- position of the chunk's first byte in the file
    bytes       BLOB    NOT NULL,
    PRIMARY KEY (artifact_id, start)
) WITHOUT ROWID;

-- What was not kept, and why: over the bound, a symlink or a device not followed, a failure.
CREATE TABLE IF NOT EXISTS artifact_notices (
    run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    attempt INTEGER NOT NULL,
    seq     INTEGER NOT NULL,
    text    TEXT    NOT NULL,
    PRIMARY KEY (run_id, attempt, seq)
);
