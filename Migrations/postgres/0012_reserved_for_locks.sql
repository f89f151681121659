-- Baton fleet schema for PostgreSQL, version 12: a placeholder on branch fleet/debounce only.
--
-- Version 12 is fleet locks' (branch fleet/locks, written in parallel); debounce takes 13.
-- Migration versions must run without gaps (EmbedMigrations), so this branch holds 12's place
-- with a statement that changes nothing. At the merge, locks' 0012 replaces this file (delete
-- it); if debounce lands first, renumber debounce to 0012 and delete this file instead.
SELECT 1;
