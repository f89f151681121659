-- Baton history schema, version 5: webhook deliveries (issue 27). Forward only, like 0001.
--
-- A forge sends each delivery with an id (X-GitHub-Delivery, X-Gitea-Delivery,
-- X-Gitlab-Event-UUID, Idempotency-Key) and sends it again when it saw no answer. The first
-- delivery with an id records the run it created or joined; a later one with the same id for
-- the same hook is answered with that run, not a second one. Rows go with their run (retention).
CREATE TABLE webhook_deliveries (
    hook     TEXT    NOT NULL,
    delivery TEXT    NOT NULL,
    run_id   INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    address  TEXT,                               -- the sender, as the listener saw it
    at       INTEGER NOT NULL,                   -- when the first delivery came (µs)
    PRIMARY KEY (hook, delivery)
) WITHOUT ROWID;

CREATE INDEX webhook_deliveries_by_run ON webhook_deliveries (run_id);
