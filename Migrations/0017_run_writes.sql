-- Baton history schema, version 17: cheaper writes of a run's row (issue 39, item 3). Forward only, like 0001.
--
-- No table, column or row changes. Two things each write of a run's phase paid for:
-- * `runs_by_action_outcome` (action, phase, ended_at) held every run, so that each phase change
--   moved its entry (queued, loading, then the end): it now holds ended runs only (`ended_at` is
--   set by the end and only by it), so a run's entry is written once, at its end. Every query it
--   serves (`stats`, the last successes' durations) asks for an `ended_at`, or says `IS NOT NULL`.
-- * `runs.phase`'s CHECK, `phase IN (six phases)`, which SQLite evaluates with a temporary table
--   built for each statement that writes the phase (about 34,000 instructions, a quarter of a
--   `/bin/true` run's writes), becomes the same check as six comparisons. The CHECK is part of
--   the table's definition, which SQL cannot alter without copying the table, so it is
--   rewritten by code right after this file, in the same transaction
--   (Sources/BatonStore/PhaseCheck.swift): the definition's text is changed in place (SQLite's
--   documented way to change a CHECK that every row already satisfies); a database that does
--   not allow that (SQLITE_DBCONFIG_DEFENSIVE) keeps the old, equivalent CHECK.
DROP INDEX runs_by_action_outcome;
CREATE INDEX runs_by_action_outcome ON runs (action, phase, ended_at) WHERE ended_at IS NOT NULL;
