import BatonCore
import FoundationEssentials

/// The statements of the fleet's artifacts (`Migrations/postgres/0019_artifacts.sql`): how a keep
/// writes its rows and chunks and publishes them, and how any host reads them back. Bytes travel
/// as hex text (the connection speaks text only).
enum FleetArtifactRows {
    /// A file whose chunks are all written: its row, size and digest.
    struct Kept: Sendable, Equatable {
        var id: Int64
        var size: Int64
        var sha256: String
    }

    /// The run is still `incarnation`'s and in flight (`loading`, `retrying`: an attempt's files
    /// are kept before its end is told). `lock` holds its row `FOR SHARE` until the transaction
    /// ends: a takeover (the reaper's, or a restart's) updates that row, so it waits for a
    /// publication holding it, or the publication, coming after, finds the run gone. A host
    /// marked gone publishes nothing either.
    static func owned(_ run: Int64, by incarnation: String, lock: Bool, on db: PGConnection) throws -> Bool {
        try db.query("""
            SELECT 1 FROM runs WHERE id = $1 AND incarnation = $2 AND phase IN ('loading', 'retrying')
              AND EXISTS (SELECT 1 FROM hosts WHERE incarnation = $2 AND gone_at IS NULL)
            \(lock ? "FOR SHARE OF runs" : "")
            """, [String(run), incarnation]).first != nil
    }

    /// The unpublished rows of an attempt's files (what this incarnation began of the same attempt
    /// before removed first); their ids, in the files' order. Nil when the run is no longer this
    /// incarnation's: nothing is written then.
    static func begin(_ files: [ArtifactScan.File], run: Int64, attempt: Int, at: Timestamp, incarnation: String,
                      on db: PGConnection) throws -> [Int64]? {
        try db.transaction {
            guard try owned(run, by: incarnation, lock: false, on: db) else { return nil }
            try removeBegun(run: run, attempt: attempt, incarnation: incarnation, on: db)
            guard !files.isEmpty else { return [] }
            let rows = try db.query("""
                INSERT INTO artifacts (run_id, attempt, name, size, sha256, type, at, incarnation)
                SELECT $1, $2, n, 0, '', t, $3, $4 FROM unnest($5::text[], $6::text[]) AS f (n, t)
                RETURNING name, id
                """, [String(run), String(attempt), String(at.rawValue), incarnation,
                      FleetJournal.textArray(files.map(\.name)), FleetJournal.textArray(files.map { ArtifactType.of($0.name) })]).rows
            // By the names' bytes: String equality is canonical equivalence, and "café" written
            // precomposed or decomposed are two files (and two rows).
            var ids: [[UInt8]: Int64] = [:]
            for row in rows { if let name = row[0], let id = row[1].flatMap({ Int64($0) }) { ids[Array(name.utf8)] = id } }
            return files.map { ids[Array($0.name.utf8)] ?? 0 }
        }
    }

    /// One chunk of a file, its own statement (autocommitted): what a keep writes between, a few
    /// bytes at a time, while the fleet's other transactions go on. Written again, the same bytes.
    static func writeChunk(_ bytes: [UInt8], of id: Int64, at start: Int64, on db: PGConnection) throws {
        try db.query("""
            INSERT INTO artifact_chunks (artifact_id, start, bytes) VALUES ($1, $2, decode($3, 'hex'))
            ON CONFLICT (artifact_id, start) DO UPDATE SET bytes = excluded.bytes
            """, [String(id), String(start), PGHex.encode(bytes)])
    }

    /// Publishes an attempt's files in one transaction, while the run is still `incarnation`'s
    /// (`owned`, its row held): the run's files published before (an earlier attempt's) are
    /// unpublished, this attempt's kept ones published, each checked against its chunks, and the
    /// notices replaced. Returns nil, writing nothing, when the run is no longer its own, else
    /// the rows it unpublished. Those are removed after the commit (`removeUnpublished`): a big
    /// earlier attempt's chunks are not deleted while the run's row is held.
    static func publish(_ kept: [Kept], notices: [String], run: Int64, attempt: Int, incarnation: String,
                        on db: PGConnection) throws -> [Int64]? {
        try db.transaction {
            guard try owned(run, by: incarnation, lock: true, on: db) else { return nil }
            let unpublished = try db.query("UPDATE artifacts SET kept = false WHERE run_id = $1 AND kept RETURNING id",
                                           [String(run)]).rows.compactMap { $0[0].flatMap { Int64($0) } }
            let published = try db.query("""
                UPDATE artifacts a SET kept = true, size = k.size, sha256 = k.sha
                FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS k (id, size, sha)
                WHERE a.id = k.id AND a.run_id = $4 AND a.attempt = $5 AND a.incarnation = $6 AND NOT a.kept
                  AND k.size = coalesce((SELECT sum(length(c.bytes)) FROM artifact_chunks c WHERE c.artifact_id = a.id), 0)
                """, [FleetOutput.array(kept.map { String($0.id) }), FleetOutput.array(kept.map { String($0.size) }),
                      FleetJournal.textArray(kept.map(\.sha256)), String(run), String(attempt), incarnation]).affected
            guard published == kept.count else {
                // A row or a chunk is missing (removed under the keep): nothing of it is published.
                throw PGError(message: "run \(run): \(kept.count - published) of \(kept.count) artifacts lost their rows or chunks while written")
            }
            try db.query("DELETE FROM artifact_notices WHERE run_id = $1", [String(run)])
            if !notices.isEmpty {
                try db.query("""
                    INSERT INTO artifact_notices (run_id, attempt, seq, text)
                    SELECT $1, $2, s - 1, t FROM unnest($3::text[]) WITH ORDINALITY AS n (t, s)
                    """, [String(run), String(attempt), FleetJournal.textArray(notices)])
            }
            return unpublished
        }
    }

    /// A keep that gave up (PostgreSQL down past its retries, or batond stopping): its notice
    /// replaces what the attempt had (nothing of it is published), kept with the run as a run
    /// over its bound keeps its own, and removed with it.
    /// Only while the run's row is still `incarnation`'s (held meanwhile): a host that took the
    /// run over keeps its own notices. Its phase may have moved on (the run told first: `giveUp`).
    /// Whether it was recorded.
    @discardableResult
    static func recordGiveUp(_ notice: String, run: Int64, attempt: Int, incarnation: String, on db: PGConnection) throws -> Bool {
        try db.transaction {
            guard try db.query("SELECT 1 FROM runs WHERE id = $1 AND incarnation = $2 FOR SHARE", [String(run), incarnation]).first != nil else {
                return false
            }
            try db.query("DELETE FROM artifact_notices WHERE run_id = $1 AND attempt = $2", [String(run), String(attempt)])
            try db.query("INSERT INTO artifact_notices (run_id, attempt, seq, text) VALUES ($1, $2, 0, $3)",
                         [String(run), String(attempt), notice])
            return true
        }
    }

    /// What `incarnation` began of the attempt and did not publish.
    static func removeBegun(run: Int64, attempt: Int, incarnation: String, on db: PGConnection) throws {
        try db.query("DELETE FROM artifacts WHERE run_id = $1 AND attempt = $2 AND incarnation = $3 AND NOT kept",
                     [String(run), String(attempt), incarnation])
    }

    /// Once `incarnation` published the run's files: the rows its publication unpublished (an
    /// earlier attempt's) and its own left unpublished (files not read). Never another
    /// incarnation's rows being written: a host that took the run over after the publication.
    static func removeUnpublished(run: Int64, unpublished: [Int64], incarnation: String, on db: PGConnection) throws {
        try db.query("DELETE FROM artifacts WHERE run_id = $1 AND NOT kept AND (incarnation = $2 OR id = ANY($3::bigint[]))",
                     [String(run), incarnation, FleetOutput.array(unpublished.map { String($0) })])
    }

    /// The unpublished rows of `incarnation` (the caller, between its keeps: none is being
    /// written) and of every incarnation marked gone (none of them can publish); how many.
    @discardableResult
    static func sweep(_ incarnation: String, on db: PGConnection) throws -> Int {
        try db.query("""
            DELETE FROM artifacts a WHERE NOT kept
              AND (incarnation = $1 OR EXISTS (SELECT 1 FROM hosts h WHERE h.incarnation = a.incarnation AND h.gone_at IS NOT NULL))
            """, [incarnation]).affected
    }
}
