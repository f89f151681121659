-- Baton fleet schema for PostgreSQL, version 14: a host's queued runs in the order it starts them. Forward only.
--
-- Each host's feed asks, at every tick (every commit of every host), for its queued runs that
-- hold a free key, the runs in a lock's line first, then by id, as many as it has start slots
-- (`FleetCoordinator.startWaiting`). With only `runs_unfinished` (incarnation), PostgreSQL read
-- every queued run of the host and sorted them for each tick: 0.68 ms a tick with 1,500 queued
-- runs in a bench run, the largest item of the server's time. This index gives them in that
-- order, so the query stops after the few it may start. Nothing to fill.
CREATE INDEX runs_queued_by_host ON runs (incarnation, lock_wait, id) WHERE phase = 'queued';
