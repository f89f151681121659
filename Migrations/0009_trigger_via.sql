-- Baton history schema, version 9: where a trigger that made no run came from. Forward only, like 0001.
--
-- A webhook delivery or a hook that joined, coalesced into or was rejected by a run in flight
-- was recorded against that run with no peer, so that `show` could only say "from no peer". Its
-- `via` ("webhook gh from 203.0.113.7, delivery 72d3…", "the failure hook of deploy run 7"), as
-- a run it made keeps it in `runs.via`, is now kept with the trigger. NULL for a socket trigger
-- and for triggers recorded before this version.
ALTER TABLE triggers ADD COLUMN via TEXT;
