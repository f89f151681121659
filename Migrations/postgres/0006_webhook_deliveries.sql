-- Baton fleet schema for PostgreSQL, version 6: webhook deliveries, fleet-wide. Forward only.
--
-- As in the SQLite history's version 5: which run a delivery id of a hook made or joined. Hosts
-- behind one load balancer may each receive the same delivery (a forge sends it again when it saw
-- no answer): the row is inserted in the transaction that creates the run (or records the
-- trigger that joined it), and the primary key lets one of two concurrent transactions commit;
-- the other rolls back and answers with the first one's run. Rows go with their run (retention).
CREATE TABLE webhook_deliveries (
    hook     TEXT   NOT NULL,
    delivery TEXT   NOT NULL,
    run_id   BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    address  TEXT,                                -- the sender, as the listener saw it
    host     TEXT   NOT NULL,                     -- the host that took the delivery
    at       BIGINT NOT NULL,                     -- when the first delivery came (µs)
    PRIMARY KEY (hook, delivery)
);

CREATE INDEX webhook_deliveries_by_run ON webhook_deliveries (run_id);
