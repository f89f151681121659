import BatonCore
import FoundationEssentials

/// A run's artifacts as any host serves them: its published files (`FleetArtifacts` wrote them on
/// the host that ran it), each read a piece at a time, every piece in one statement (one snapshot).
extension FleetHistory {
    func artifacts(of run: Int64) async throws(BatonError) -> ArtifactList {
        try await read { db in try FleetArtifactRows.list(run, on: db) }
    }

    func artifact(of run: Int64, named name: String, from offset: Int64, maxBytes: Int) async throws(BatonError) -> ArtifactPiece? {
        try await read { db in try FleetArtifactRows.piece(run, named: name, from: offset, maxBytes: maxBytes, on: db) }
    }
}

extension FleetArtifactRows {
    /// The files a run kept, by name, and the notices about the others, as of one snapshot (a
    /// publication replaces both at once).
    static func list(_ run: Int64, on db: PGConnection) throws -> ArtifactList {
        try db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        do {
            var list = ArtifactList(run: run)
            list.files = try db.query("SELECT name, size, sha256, type, attempt FROM artifacts WHERE run_id = $1 AND kept ORDER BY name",
                                      [String(run)]).rows.map(info)
            list.notices = try db.query("SELECT text FROM artifact_notices WHERE run_id = $1 ORDER BY attempt, seq",
                                        [String(run)]).rows.map { $0[0] ?? "" }
            try db.execute("COMMIT")
            return list
        } catch {
            if db.isOK { try? db.execute("ROLLBACK") }
            throw error
        }
    }

    /// Up to `maxBytes` of the file `name` of `run` from `offset` (cut out of its chunks by the
    /// server); nil when the run kept no such file.
    static func piece(_ run: Int64, named name: String, from offset: Int64, maxBytes: Int, on db: PGConnection) throws -> ArtifactPiece? {
        let from = max(offset, 0), most = Int64(max(maxBytes, 1))
        // The file's row, and the part of each chunk within [from, from + most), in order; a file
        // of no bytes (or a piece past its end) has one row with no chunk.
        let rows = try db.query(pieceSQL, [String(run), name, String(from), String(most)]).rows
        guard let first = rows.first else { return nil }
        let artifact = info(first)
        let start = min(from, artifact.size)
        var bytes: [UInt8] = []
        for row in rows {
            guard let at = row[5].flatMap({ Int64($0) }), at <= start + Int64(bytes.count) else { break }
            bytes += PGHex.decode(row[6] ?? "")
        }
        let end = start + Int64(bytes.count)
        return ArtifactPiece(artifact: artifact, from: start, bytes: bytes, next: end < artifact.size ? end : nil)
    }

    /// The piece's statement: `$1` the run, `$2` the name, `$3` from, `$4` how many bytes. No chunk
    /// is over `FleetArtifacts.chunk` bytes, so those that hold a byte of the piece start after
    /// `from - chunk`: the chunks' index is searched between both bounds (never from the file's
    /// first chunk: each piece of a big download reads the few chunks it needs).
    static let pieceSQL = """
        SELECT a.name, a.size, a.sha256, a.type, a.attempt, c.start,
               encode(substring(c.bytes FROM (greatest(c.start, $3::bigint) - c.start + 1)::int
                                FOR (least(c.start + length(c.bytes), $3::bigint + $4::bigint) - greatest(c.start, $3::bigint))::int), 'hex')
        FROM artifacts a LEFT JOIN artifact_chunks c
          ON c.artifact_id = a.id AND c.start < $3::bigint + $4::bigint AND c.start > $3::bigint - \(FleetArtifacts.chunk)
         AND c.start + length(c.bytes) > $3::bigint
        WHERE a.run_id = $1 AND a.name = $2 AND a.kept
        ORDER BY c.start
        """

    /// `name, size, sha256, type, attempt` as the wire's value.
    static func info(_ row: [String?]) -> ArtifactInfo {
        ArtifactInfo(name: row[0] ?? "", size: row[1].flatMap { Int64($0) } ?? 0, sha256: row[2] ?? "", type: row[3] ?? "",
                     attempt: row[4].flatMap { Int($0) } ?? 0)
    }
}
