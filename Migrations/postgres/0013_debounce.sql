-- Baton fleet schema for PostgreSQL, version 13: debounce across hosts. Forward only.
--
-- A debounced run waits, `queued`, until no trigger of its key has come for its window, or
-- `max_wait` after its burst's first trigger. While it waits, its row keeps that window as the
-- engine's `DebounceWindow` does: when the burst began (`debounce_first`), when it may start
-- (`debounce_until`), and the action's window and maxWait it was created with (µs). Both times
-- are the database's clock, read in the transaction that holds the key's slot row, so hosts'
-- clocks neither stretch nor shrink the window. A trigger of the key on any host, holding that
-- row, joins the run and pushes `debounce_until` back by the engine's rule; the host that owns
-- the run starts it only once `debounce_until` has passed, read under the same lock. The
-- transition to `loading` clears `debounce_until`: a run that started is no longer pending
-- (`debounce_first`, the window and maxWait stay, as the record of what it waited).
-- Runs queued before this version never debounced: nothing to fill.
ALTER TABLE runs ADD COLUMN debounce_first BIGINT, ADD COLUMN debounce_until BIGINT,
    ADD COLUMN debounce_window BIGINT, ADD COLUMN debounce_max_wait BIGINT;
