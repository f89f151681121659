-- Baton fleet schema for PostgreSQL, version 23: each start records the tag its processes carry
-- (`BATON_INSTANCE`, `hosts.instance`), so that the next start of the host kills, removes the
-- cgroups of and ends the guard of its previous starts by their own tags, not by its own: the
-- tag is made from the connection string's text, which may change between two starts (a
-- password rotated). NULL for a start of an older batond (the next start assumes its own tag).
-- Forward only.
ALTER TABLE hosts ADD COLUMN instance TEXT;
