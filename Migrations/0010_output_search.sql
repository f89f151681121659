-- Baton history schema, version 10: search across every run's kept output. Forward only, like 0001.
--
-- Nothing to change in the schema: `baton search` scans the kept output (`output_chunks`) by
-- default. The trigram index (`output_search`, an FTS5 table over `output_chunks`, and its
-- triggers) is a choice of batond's config (`search: "index"`), not of the schema: the store
-- makes it at open when asked and drops it when not (Sources/BatonStore/SearchIndex.swift), since
-- keeping it costs the one writer about 13 ms per 64 KiB chunk. The version stays, so that
-- histories that ran an earlier form of this migration (which made the index unconditionally)
-- and new ones agree on the number.
SELECT 1;
