-- Baton history schema, version 6: where a run's trigger came from. Forward only, like 0001.
--
-- A trigger from beyond the socket (a webhook) has no peer; its `via` ("webhook github-deploy
-- from 203.0.113.7, delivery 72d3…") was kept only in the detail of the run's `queued`
-- transition. The run's row now carries it, so that `history` and the dashboard show it without
-- reading transitions. NULL for a socket trigger and for runs recorded before this version.
ALTER TABLE runs ADD COLUMN via TEXT;
