-- Baton history schema, version 18: a stop asked of a running run, written down. Forward only, like 0001.
--
-- `runs.stop`: a cancel or a replace asked of a run whose attempt runs (`RunMachine.Stop.recordText`:
-- `cancelled 1000`, `replaced 42`), written as its process is told to stop; NULL otherwise. A batond
-- started after a crash ends such a run as the stop says (reason `cancelled`, `replaced`) instead of
-- starting it again where its action says `onInterrupt: "restart"`, and stops a survivor it adopts.
-- The fleet's PostgreSQL `runs.stop` (its schema 6) holds the same text.
ALTER TABLE runs ADD COLUMN stop TEXT;
