-- Baton fleet schema for PostgreSQL, version 19: reserved, nothing changes. Forward only.
--
-- Left for another branch of the same session (versions must run without gaps: the build's
-- migration embedder refuses one). At the merge, where another branch brings its own 0019, this
-- file goes and that one takes the number; where none does, it stays, a no-op.
SELECT 1;
