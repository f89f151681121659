import BatonCore
import FoundationEssentials

/// The optional trigram index over the kept output (`search: "index"` in batond's config): an
/// FTS5 table over `output_chunks` (external content: the bytes are not stored twice) and the
/// triggers that keep it in step in the writer's own transactions. Off by default: tokenizing
/// costs the one writer about 13 ms per 64 KiB chunk, which every run's commits wait behind;
/// without it `History.search` scans the kept output instead.
///
/// The store makes or drops it at open, as asked, in one transaction (a crash leaves the file as
/// it was); opening with the setting it already has changes nothing. It refers to chunks by rowid,
/// which only a VACUUM renumbers (batond never runs one): after a manual VACUUM,
/// `INSERT INTO output_search (output_search) VALUES ('rebuild')` makes it again.
/// Needs SQLite 3.34 or later (trigram).
public enum SearchIndex {
    /// What the store is about to do to the index at open (for the log, and systemd's start timeout).
    public enum Change: Sendable, Equatable {
        /// Making it over the chunks the history has (their count and bytes): long on a large history.
        case building(chunks: Int64, bytes: Int64)
        /// Dropping it: asked for no index.
        case dropping
    }

    static let objects = ["output_search", "output_search_insert", "output_search_delete", "output_search_update"]

    private static let create = """
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
        """

    private static let drop = """
        DROP TRIGGER IF EXISTS output_search_insert; DROP TRIGGER IF EXISTS output_search_delete;
        DROP TRIGGER IF EXISTS output_search_update; DROP TABLE IF EXISTS output_search;
        """

    /// How many of the index's table and triggers the file has (4: all, 0: none).
    static func parts(_ connection: Connection) throws -> Int {
        let names = objects.map { "'\($0)'" }.joined(separator: ", ")
        return Int(try connection.scalar("SELECT count(*) FROM sqlite_master WHERE name IN (\(names))")?.int64 ?? 0)
    }

    /// Whether the file has the index, whole.
    public static func isPresent(_ connection: Connection) throws -> Bool {
        try parts(connection) == objects.count
    }

    /// Makes the index when `wanted` and missing (or incomplete), drops it when not wanted and
    /// present, in one IMMEDIATE transaction; `willChange` is told first. Returns what it did.
    @discardableResult
    public static func apply(wanted: Bool, on connection: Connection,
                             willChange: ((Change) -> Void)? = nil) throws -> Change? {
        // Read outside the transaction first: the usual open (nothing to do) writes nothing.
        let found = try parts(connection)
        guard wanted ? found != objects.count : found != 0 else { return nil }
        return try connection.transaction(immediate: true) { () throws -> Change? in
            // Another process may have done it while we waited for the lock.
            let now = try parts(connection)
            guard wanted ? now != objects.count : now != 0 else { return nil }
            let change: Change
            if wanted {
                let chunks = try connection.scalar("SELECT count(*) FROM output_chunks")?.int64 ?? 0
                let bytes = try connection.scalar("SELECT coalesce(sum(length(bytes)), 0) FROM output_chunks")?.int64 ?? 0
                change = .building(chunks: chunks, bytes: bytes)
            } else {
                change = .dropping
            }
            willChange?(change)
            // A part left without the rest (by hand) goes first: the index is made whole or not at all.
            try connection.execute(drop)
            if wanted { try connection.execute(create) }
            return change
        }
    }
}
