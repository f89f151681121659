-- Baton fleet schema for PostgreSQL, version 20: runs that wait for a person's yes (`approve`),
-- fleet-wide. Forward only.
--
-- As in the SQLite history (0014_approvals): a run of an action with `approve: { by: [...],
-- timeout: "1h" }` is created `queued`, holding its key, and waits for an approver. Its row here
-- is written in the trigger batch's transaction that creates the run: who may approve, as the
-- config wrote it (one a line), who triggered it (`origin_uid`: the origin may
-- not approve unless `self: true`), and when the wait ends by the database's clock (`until`).
-- `baton approve` / `baton deny` on any host decides it once: one UPDATE ... WHERE verdict IS
-- NULL, under the run's key row; a start on the owner's host reads the row with the run and does
-- not start it while `verdict` is NULL (`KeyDecision.mayStart`). The timeout is decided by
-- whichever host's feed tick sees it first, by the same guarded UPDATE. Times are microseconds
-- since the epoch; `until` and `decided_at` by the database's clock.
CREATE TABLE approvals (
    run_id BIGINT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    action TEXT NOT NULL,
    approvers TEXT NOT NULL,
    origin_uid BIGINT,
    until BIGINT,
    verdict TEXT CHECK (verdict IN ('approved', 'denied', 'timed_out', 'waived')),
    decided_by TEXT,
    decided_at BIGINT,
    reason TEXT
);
-- The waits a feed tick's timeout look reads, and `baton approvals`'s list: undecided only.
CREATE INDEX approvals_waiting ON approvals (until) WHERE verdict IS NULL;
