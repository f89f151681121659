-- Baton history schema, version 10: search across every run's kept output. Forward only, like 0001.
--
-- An FTS5 index over `output_chunks` (external content: the bytes are not stored twice), with the
-- trigram tokenizer, so that any substring of three characters or more (a path, an error, half
-- a word) is found, without regard to case. One document per chunk: a match that a chunk's end
-- cuts in two (64 KiB, or where one write of the run's output ended) is not found by the index.
-- The triggers keep it in step in the same transactions as the chunks: the writer's inserts,
-- the window's removals, retention's deletes (through the cascade from `runs`). The last
-- statement indexes the chunks an existing history already has.
--
-- The index refers to chunks by rowid, which only a VACUUM renumbers (batond never runs one):
-- after a manual VACUUM, `INSERT INTO output_search (output_search) VALUES ('rebuild')` makes
-- it again. Needs SQLite 3.34 or later (trigram).
CREATE VIRTUAL TABLE output_search USING fts5 (bytes, content = 'output_chunks', tokenize = 'trigram');

CREATE TRIGGER output_search_insert AFTER INSERT ON output_chunks BEGIN
    INSERT INTO output_search (rowid, bytes) VALUES (new.rowid, new.bytes);
END;

CREATE TRIGGER output_search_delete AFTER DELETE ON output_chunks BEGIN
    INSERT INTO output_search (output_search, rowid, bytes) VALUES ('delete', old.rowid, old.bytes);
END;

CREATE TRIGGER output_search_update AFTER UPDATE ON output_chunks BEGIN
    INSERT INTO output_search (output_search, rowid, bytes) VALUES ('delete', old.rowid, old.bytes);
    INSERT INTO output_search (rowid, bytes) VALUES (new.rowid, new.bytes);
END;

INSERT INTO output_search (output_search) VALUES ('rebuild');
