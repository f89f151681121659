-- Baton history schema, version 14: runs that wait for a person's yes (`approve`). Forward only,
-- like 0001.
--
-- A run of an action with `approve: { by: ["group:ops"], timeout: "1h" }` is created `queued`
-- and waits for an approver. Its row here is written in the item that creates the run (who may
-- approve, as the config wrote it, and when the wait ends), then replaced by its decision: who
-- approved or denied it, when, and why; or that it timed out. A restart finds a waiting run
-- waiting still, its timeout counted from its creation; `baton show` tells the decision.
-- Rows go with their run (retention, `baton prune`): ON DELETE CASCADE.
-- Self-contained: it reads or changes no other table, so it may be renumbered at a merge.
CREATE TABLE IF NOT EXISTS approvals (
    run_id     INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    approvers  TEXT    NOT NULL,          -- the config's `by`, one a line: group:ops, user:alice
    until      INTEGER,                   -- when the wait ends by itself (µs); NULL: never
    verdict    TEXT,                      -- NULL while waiting; approved, denied, timed_out
    decided_by TEXT,                      -- the approver's user name
    decided_at INTEGER,                   -- µs
    reason     TEXT                       -- a deny's reason
);
